// CoreSet: a set of global logical core ids (or device indices), with the "0-3,8" text form
// that NEURON_RT_VISIBLE_CORES and our annotations use.
//
// A fixed 512-bit set: the largest node (trn2 at LNC 1) has 128 logical cores and a whole Trn2
// UltraServer 512, so every set fits without allocating, and the extender can copy and compare
// thousands of them per request cheaply.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus::topology {

class CoreSet {
 public:
  static constexpr int kCapacity = 512;

  CoreSet() = default;
  // [first, first + count)
  static CoreSet range(int first, int count);
  static CoreSet fromIds(std::span<const int> ids);
  // Accepts "", "5", "0-3", "0-3,8,10-11" with optional spaces; rejects reversed or overlapping
  // ranges, duplicates, ids >= kCapacity and anything that is not a decimal number.
  static Result<CoreSet> parse(std::string_view text);

  void insert(int id);
  void erase(int id);
  bool contains(int id) const;
  int size() const;
  bool empty() const { return size() == 0; }
  int first() const;  // -1 when empty
  int last() const;   // -1 when empty
  bool isContiguous() const;
  bool isSubsetOf(const CoreSet& other) const;
  bool intersects(const CoreSet& other) const;

  std::vector<int> ids() const;
  std::string toRangeString() const;  // "0-3,8"
  std::string toListString() const;   // "0,1,2,3,8"

  CoreSet operator|(const CoreSet& other) const;
  CoreSet operator&(const CoreSet& other) const;
  CoreSet operator-(const CoreSet& other) const;
  CoreSet& operator|=(const CoreSet& other);
  CoreSet& operator-=(const CoreSet& other);
  auto operator<=>(const CoreSet& other) const = default;  // ordered, so sets can key a map

  template <typename Visit>
  void forEach(Visit visit) const {
    for (int word = 0; word < kWords; ++word) {
      std::uint64_t bits = words_[static_cast<std::size_t>(word)];
      while (bits != 0) {
        visit(word * 64 + std::countr_zero(bits));
        bits &= bits - 1;
      }
    }
  }

 private:
  static constexpr int kWords = kCapacity / 64;
  std::array<std::uint64_t, kWords> words_{};
};

// NEURON_RT_VISIBLE_CORES text, as the device plugin and the DRA driver hand it to the runtime:
// "0-3" for one run, else a comma list (runtime >= 2.16).
std::string visibleCoresText(const CoreSet& cores);

}  // namespace torus::topology
