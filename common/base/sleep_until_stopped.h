// sleepUntilStopped: the one interruptible sleep of Torus's background threads.
//
// A thread that retries, polls or backs off waits a fixed time that only a stop request may cut
// short, so destroying its owner (std::jthread requests stop and joins) never waits for a whole
// period. It owns no state: a wait that something else should also end early (a change to
// publish, a poke) belongs on the owner's condition variable and predicate instead.
#pragma once

#include <chrono>
#include <stop_token>

namespace torus {

// Sleeps for `duration`, or less if a stop is requested on `stop` meanwhile (or already was).
// Returns true if a stop was requested, false if the whole duration passed.
bool sleepUntilStopped(std::stop_token stop, std::chrono::steady_clock::duration duration);

}  // namespace torus
