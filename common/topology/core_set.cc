#include "common/topology/core_set.h"

#include <algorithm>

#include "common/base/check.h"
#include "common/base/parse.h"
#include "common/base/strings.h"

namespace torus::topology {
namespace {

std::size_t wordOf(int id) {
  return static_cast<std::size_t>(id / 64);
}
std::uint64_t bitOf(int id) {
  return std::uint64_t{1} << (id % 64);
}

Error badSet(std::string_view text, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument,
                   "core set " + quoteJsonString(clipForMessage(text)) + ": " + why);
}

}  // namespace

CoreSet CoreSet::range(int first, int count) {
  CoreSet set;
  for (int id = first; id < first + count; ++id)
    set.insert(id);
  return set;
}

CoreSet CoreSet::fromIds(std::span<const int> ids) {
  CoreSet set;
  for (const int id : ids)
    set.insert(id);
  return set;
}

Result<CoreSet> CoreSet::parse(std::string_view text) {
  CoreSet set;
  if (trim(text).empty()) return set;
  for (const std::string_view item : splitAndTrim(text, ',')) {
    if (item.empty()) return badSet(text, "empty item");
    const std::size_t dash = item.find('-', 1);  // position 0 would be a sign, which we reject
    const std::string_view low = trim(item.substr(0, dash));
    auto first = parseInt(low, 0, kCapacity - 1);
    if (!first) return badSet(text, first.error().message);
    int lastId = *first;
    if (dash != std::string_view::npos) {
      auto last = parseInt(trim(item.substr(dash + 1)), 0, kCapacity - 1);
      if (!last) return badSet(text, last.error().message);
      if (*last < *first) {
        return badSet(text, "range " + std::string(item) + " runs backwards");
      }
      lastId = *last;
    }
    for (int id = *first; id <= lastId; ++id) {
      if (set.contains(id)) return badSet(text, "id " + std::to_string(id) + " appears twice");
      set.insert(id);
    }
  }
  return set;
}

void CoreSet::insert(int id) {
  TORUS_CHECK(id >= 0 && id < kCapacity, "core id out of range: " + std::to_string(id));
  words_[wordOf(id)] |= bitOf(id);
}

void CoreSet::erase(int id) {
  if (id < 0 || id >= kCapacity) return;
  words_[wordOf(id)] &= ~bitOf(id);
}

bool CoreSet::contains(int id) const {
  if (id < 0 || id >= kCapacity) return false;
  return (words_[wordOf(id)] & bitOf(id)) != 0;
}

int CoreSet::size() const {
  int count = 0;
  for (const std::uint64_t word : words_)
    count += std::popcount(word);
  return count;
}

int CoreSet::first() const {
  for (int word = 0; word < kWords; ++word) {
    const std::uint64_t bits = words_[static_cast<std::size_t>(word)];
    if (bits != 0) return word * 64 + std::countr_zero(bits);
  }
  return -1;
}

int CoreSet::last() const {
  for (int word = kWords - 1; word >= 0; --word) {
    const std::uint64_t bits = words_[static_cast<std::size_t>(word)];
    if (bits != 0) return word * 64 + 63 - std::countl_zero(bits);
  }
  return -1;
}

bool CoreSet::isContiguous() const {
  const int count = size();
  return count == 0 || last() - first() + 1 == count;
}

bool CoreSet::isSubsetOf(const CoreSet& other) const {
  return (*this - other).empty();
}

bool CoreSet::intersects(const CoreSet& other) const {
  return !(*this & other).empty();
}

std::vector<int> CoreSet::ids() const {
  std::vector<int> result;
  result.reserve(static_cast<std::size_t>(size()));
  forEach([&](int id) { result.push_back(id); });
  return result;
}

std::string CoreSet::toRangeString() const {
  std::string text;
  int runStart = -1;
  int previous = -2;
  const auto flush = [&] {
    if (runStart < 0) return;
    if (!text.empty()) text += ',';
    text += std::to_string(runStart);
    if (previous > runStart) text += '-' + std::to_string(previous);
  };
  forEach([&](int id) {
    if (id != previous + 1) {
      flush();
      runStart = id;
    }
    previous = id;
  });
  flush();
  return text;
}

std::string CoreSet::toListString() const {
  std::string text;
  forEach([&](int id) {
    if (!text.empty()) text += ',';
    text += std::to_string(id);
  });
  return text;
}

CoreSet CoreSet::operator|(const CoreSet& other) const {
  CoreSet result = *this;
  result |= other;
  return result;
}

CoreSet CoreSet::operator&(const CoreSet& other) const {
  CoreSet result;
  for (std::size_t i = 0; i < words_.size(); ++i)
    result.words_[i] = words_[i] & other.words_[i];
  return result;
}

CoreSet CoreSet::operator-(const CoreSet& other) const {
  CoreSet result = *this;
  result -= other;
  return result;
}

CoreSet& CoreSet::operator|=(const CoreSet& other) {
  for (std::size_t i = 0; i < words_.size(); ++i)
    words_[i] |= other.words_[i];
  return *this;
}

CoreSet& CoreSet::operator-=(const CoreSet& other) {
  for (std::size_t i = 0; i < words_.size(); ++i)
    words_[i] &= ~other.words_[i];
  return *this;
}

std::string visibleCoresText(const CoreSet& cores) {
  if (cores.size() > 1 && cores.isContiguous()) {
    return std::to_string(cores.first()) + "-" + std::to_string(cores.last());
  }
  return cores.toListString();
}

}  // namespace torus::topology
