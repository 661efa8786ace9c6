// The kept PCI map's file: what is written reads back the same, a record of another boot or of
// other bound functions is not used, and a damaged file is refused with the line named.
#include "node-runtime/discovery/pci_map_record.h"

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"

namespace torus::discovery {
namespace {

PciMapRecord sample() {
  return {"6f1c2b7e-0b1d-4c55-9a3e-2d4f5a6b7c8d",
          "kernel log",
          {"0000:10:1b.0", "0000:10:1c.0"},
          {{0, "0000:10:1c.0"}, {1, "0000:10:1b.0"}}};
}

TEST(PciMapRecord, RendersAndParsesBack) {
  const PciMapRecord record = sample();
  auto parsed = parsePciMapRecord(renderPciMapRecord(record));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->bootId, record.bootId);
  EXPECT_EQ(parsed->source, "kernel log");
  EXPECT_EQ(parsed->bound, record.bound);
  EXPECT_EQ(parsed->functionOf, record.functionOf);
}

TEST(PciMapRecord, ADamagedFileNamesItsLine) {
  auto bad = parsePciMapRecord("boot_id x\nneuron0 10:1b.0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("not a PCI function address"), std::string::npos);
  EXPECT_FALSE(parsePciMapRecord("boot_id x\nneuron0 0000:10:1b.0\nneuron0 0000:10:1c.0\n").ok());
  EXPECT_FALSE(parsePciMapRecord("bound 0000:10:1b.0\n").ok()) << "no boot id";
  EXPECT_FALSE(parsePciMapRecord("boot_id x\ncolour blue\n").ok());
}

TEST(PciMapRecord, OnlyThisBootAndTheseFunctionsAreUsed) {
  auto dir = TempDir::create("pci-map-record");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "state" / "pci-map";
  const PciMapRecord record = sample();
  ASSERT_TRUE(writePciMapRecord(file, record).ok());
  EXPECT_TRUE(readPciMapRecord(file, record.bootId, record.bound).has_value());
  EXPECT_FALSE(readPciMapRecord(file, "another-boot", record.bound).has_value());
  EXPECT_FALSE(readPciMapRecord(file, record.bootId, {"0000:10:1b.0"}).has_value())
      << "a chip no longer bound";
  EXPECT_FALSE(readPciMapRecord(file, "", record.bound).has_value()) << "a boot that says no id";
  ASSERT_TRUE(writeFile(file, "garbage\n").ok());
  EXPECT_FALSE(readPciMapRecord(file, record.bootId, record.bound).has_value());
  EXPECT_FALSE(readPciMapRecord(dir->path() / "none", record.bootId, record.bound).has_value());
}

}  // namespace
}  // namespace torus::discovery
