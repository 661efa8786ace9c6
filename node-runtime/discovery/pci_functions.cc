#include "node-runtime/discovery/pci_functions.h"

#include <algorithm>
#include <cctype>
#include <system_error>

namespace torus::discovery {

bool isPciAddress(std::string_view text) {
  constexpr std::string_view kShape = "xxxx:xx:xx.x";
  if (text.size() != kShape.size() || text.back() > '7') return false;
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    const char c = text[i];
    const bool hex = std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
    if (kShape[i] == 'x' ? !hex : c != kShape[i]) return false;
  }
  return true;
}

std::vector<std::string> neuronPciFunctions(const DiscoveryRoots& roots) {
  std::vector<std::string> functions;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(roots.neuronPciDriver(), ec)) {
    std::string name = entry.path().filename().string();
    if (isPciAddress(name)) functions.push_back(std::move(name));
  }
  std::sort(functions.begin(), functions.end());
  return functions;
}

}  // namespace torus::discovery
