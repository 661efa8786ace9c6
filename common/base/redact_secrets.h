// Scrubs credentials out of text that leaves the cluster (kubectl neuron debug's archive): bearer
// tokens, JSON Web Tokens, PEM private keys (also base64-wrapped), AWS access key ids, the
// password of a URL's user:password@, and the value of any key named like a credential
// (...password, ...secret, ...token, api keys). A pure function over any text, kept apart from the
// archive's layout so that every part, and any later reader of collected text, shares one scrubber.
// It recognizes credentials by their form, not by knowing them: a token that looks like none of
// these passes through, which is why the archive also reduces objects to the fields it needs.
#pragma once

#include <string>
#include <string_view>

namespace torus {

// `text` with each of those replaced by "[redacted]" (for a key or a URL, only its value).
std::string redactSecrets(std::string_view text);

}  // namespace torus
