// The order in which the deep check's AllReduce ring visits the devices: a cycle along NeuronLink
// (each device next to a device it is linked to, the last linked back to the first) when the
// links that are up allow one, so every step of the ring crosses a real link. Pure.
#pragma once

#include <functional>
#include <span>
#include <vector>

namespace torus::health {

struct NeuronLinkRing {
  std::vector<int> order;
  bool closed = false;      // the last device is linked to the first
  bool alongLinks = false;  // every consecutive pair is linked (the closing step aside)
};

// `devices` in ascending order; `linked(a, b)`: the link between a and b is up. Tries a
// Hamiltonian cycle, then a path; a graph with neither (a cut chain) gets the longest path found
// followed by the rest in index order. The search is bounded, so a node of 64 devices costs
// microseconds even when no cycle exists.
NeuronLinkRing neuronLinkRing(std::span<const int> devices,
                              const std::function<bool(int, int)>& linked);

}  // namespace torus::health
