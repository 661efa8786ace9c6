// Files an operator writes: any bytes as a kubeconfig and as a settings file (--config). Both
// must end in a value or a clear error, never an exception or an abort.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <unistd.h>

#include "common/config/settings.h"
#include "common/kube/kube_config.h"

namespace {

// The one file every input is written to, removed when the fuzzer exits (it once stayed behind).
struct InputFile {
  std::string path = "/dev/shm/torus-fuzz-config-" + std::to_string(::getpid());
  InputFile() = default;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { ::unlink(path.c_str()); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torus;
  static const InputFile file;
  const std::string& path = file.path;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  (void)kube::loadKubeconfig(path);

  config::SettingTable table("fuzz");
  std::string name;
  int count = 0;
  bool enabled = false;
  std::int64_t interval = 0;
  std::string configFile;
  table.addString("config", "", "", "FILE", "settings file", &configFile);
  table.addString("name", "", "name", "NAME", "a string", &name);
  table.addInt("count", "", "count", "N", "an int", 0, 100, &count);
  table.addSwitch("enabled", "", "enabled", "a switch", &enabled);
  table.addDurationMillis("interval", "", "interval", "a duration", &interval);
  (void)table.parse({"--config=" + path},
                    [](std::string_view) -> std::optional<std::string> { return std::nullopt; });
  return 0;
}
