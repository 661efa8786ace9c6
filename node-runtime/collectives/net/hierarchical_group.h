// HierarchicalGroup: ranks on several hosts with several ranks per host. AllReduce runs in three
// stages — over shared memory on each host, then each local rank runs the inter-host AllReduce of
// its shard with its column (the ranks with its local index on every host), then each host
// shares the shards again — so the network carries 1/L of the buffer per rank and the L columns
// run side by side. Every other collective runs on the group of all ranks.
//
// Owns nothing: the communicator owns the three groups and keeps them alive with this one.
#pragma once

#include "node-runtime/collectives/core/group.h"
#include "node-runtime/collectives/net/net_group.h"
#include "node-runtime/collectives/shm/shm_group.h"

namespace torus::coll {

class HierarchicalGroup final : public Group {
 public:
  HierarchicalGroup(NetGroup& all, ShmGroup& local, NetGroup& column)
      : all_(all), local_(local), column_(column) {}

  int rank() const override { return all_.rank(); }
  int size() const override { return all_.size(); }
  Result<void> allReduce(const GroupCall& call, const void* send, void* recv, std::size_t count,
                         DataType type, ReduceOp op) override;
  Result<void> allGather(const GroupCall& call, const void* send, void* recv, std::size_t sendCount,
                         DataType type) override {
    return all_.allGather(call, send, recv, sendCount, type);
  }
  Result<void> reduceScatter(const GroupCall& call, const void* send, void* recv,
                             std::size_t recvCount, DataType type, ReduceOp op) override {
    return all_.reduceScatter(call, send, recv, recvCount, type, op);
  }
  Result<void> allToAll(const GroupCall& call, const void* send, void* recv,
                        std::size_t countPerRank, DataType type) override {
    return all_.allToAll(call, send, recv, countPerRank, type);
  }
  Result<void> broadcast(const GroupCall& call, const void* send, void* recv, std::size_t count,
                         DataType type, int root) override {
    return all_.broadcast(call, send, recv, count, type, root);
  }
  Result<void> reduce(const GroupCall& call, const void* send, void* recv, std::size_t count,
                      DataType type, ReduceOp op, int root) override {
    return all_.reduce(call, send, recv, count, type, op, root);
  }
  Result<void> barrier(const GroupCall& call) override { return all_.barrier(call); }
  Result<void> permute(const GroupCall& call, const void* send, void* recv, std::size_t bytes,
                       int sendTo, int recvFrom, std::uint64_t sendMessage,
                       std::uint64_t recvMessage) override {
    return all_.permute(call, send, recv, bytes, sendTo, recvFrom, sendMessage, recvMessage);
  }

 private:
  NetGroup& all_;
  ShmGroup& local_;
  NetGroup& column_;
};

}  // namespace torus::coll
