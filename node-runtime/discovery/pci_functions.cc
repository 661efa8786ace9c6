#include "node-runtime/discovery/pci_functions.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "common/base/parse.h"
#include "node-runtime/discovery/sysfs_attribute.h"

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

std::string pcieRootOf(const DiscoveryRoots& roots, const std::string& bdf) {
  if (!isPciAddress(bdf)) return "";
  std::error_code ec;
  const std::filesystem::path link = roots.sys / "bus" / "pci" / "devices" / bdf;
  std::filesystem::path target = std::filesystem::read_symlink(link, ec);
  if (ec) return "";
  if (target.is_relative()) target = (link.parent_path() / target).lexically_normal();
  // .../devices/pciDDDD:BB/.../<bdf>: the component after the last "devices" before a pci root.
  const std::filesystem::path relative = target.lexically_relative(roots.sys / "devices");
  if (relative.empty() || target.filename() != bdf) return "";
  const std::string root = relative.begin()->string();
  return root.starts_with("pci") && root.size() > 3 ? root : "";
}

std::optional<int> numaNodeOfFunction(const std::filesystem::path& function) {
  auto numa = readParsed(function / "numa_node", "numa_node",
                         [](std::string_view text) { return parseInt(text, -1, 1023); });
  if (!numa || *numa < 0) return std::nullopt;
  return *numa;
}

}  // namespace torus::discovery
