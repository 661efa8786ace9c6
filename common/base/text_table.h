// TextTable: the boxed tables our CLIs print (neuron-ls, kubectl-neuron).
#pragma once

#include <string>
#include <vector>

namespace torus {

class TextTable {
 public:
  // A header cell may hold two lines separated by '\n' ("NEURON\nDEVICE").
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void addRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace torus
