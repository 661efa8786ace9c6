// The collectives on shared memory, each as a plan (who reads and writes how many bytes) and a
// body that runs once every rank has published its buffers. See shm_group.h for the protocol
// and docs/algorithms.md for the bytes each moves.
//
// All bodies are "direct": rank r works on its own share straight in the peers' memory, so one
// collective costs two barriers plus the data movement and the work spreads evenly over ranks.
// Every body is safe in place: a region is only ever read and written by the same rank, and a
// reduction reads each line of every input before writing that line of any output.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/base/log.h"
#include "node-runtime/collectives/core/reduce_kernels.h"
#include "node-runtime/collectives/core/streaming_stores.h"
#include "node-runtime/collectives/shm/control_layout.h"
#include "node-runtime/collectives/shm/shm_group.h"

namespace torus::coll {
namespace {

OpDescriptor describeOp(OpKind kind, DataType type, ReduceOp op, int root, std::size_t count) {
  OpDescriptor desc;
  desc.op = kind;
  desc.type = type;
  desc.reduceOp = op;
  desc.root = root;
  desc.count = count;
  return desc;
}

std::size_t elementBytes(const OpDescriptor& d) {
  return dataTypeSize(d.type);
}

std::size_t countBytes(const OpDescriptor& d, int, int) {
  return d.count * elementBytes(d);
}
std::size_t worldBytes(const OpDescriptor& d, int, int size) {
  return d.count * elementBytes(d) * static_cast<std::size_t>(size);
}
std::size_t rootOnlyBytes(const OpDescriptor& d, int peer, int) {
  return peer == d.root ? d.count * elementBytes(d) : 0;
}

// Rank r's share of `count` elements: chunks rounded up to a cache line so two ranks never
// write the same line.
std::pair<std::size_t, std::size_t> shareOf(std::size_t count, std::size_t elemBytes, int rank,
                                            int size) {
  const std::size_t perLine = std::max<std::size_t>(1, 64 / elemBytes);
  std::size_t chunk = (count + static_cast<std::size_t>(size) - 1) / static_cast<std::size_t>(size);
  chunk = (chunk + perLine - 1) / perLine * perLine;
  const std::size_t begin = std::min(count, chunk * static_cast<std::size_t>(rank));
  const std::size_t end = std::min(count, begin + chunk);
  return {begin, end};
}

}  // namespace

Result<void> ShmGroup::allReduce(const GroupCall& call, const void* send, void* recv,
                                 std::size_t count, DataType type, ReduceOp op) {
  const std::size_t bytes = count * dataTypeSize(type);
  if (useSlots(OpKind::kAllReduce, bytes)) {
    return runInline(call, describeOp(OpKind::kAllReduce, type, op, 0, count), send, bytes,
                     [&](std::span<const std::byte* const> inputs) {
                       if (count > 0) reduceInto(recv, inputs, count, type, op);
                     });
  }
  Plan plan;
  plan.desc = describeOp(OpKind::kAllReduce, type, op, 0, count);
  plan.send = send;
  plan.sendBytes = bytes;
  plan.recv = recv;
  plan.recvBytes = bytes;
  plan.peerInBytes = countBytes;
  plan.peerOutBytes = countBytes;
  return runCollective(call, plan, [&](const Views& views) {
    const std::size_t elem = dataTypeSize(type);
    const auto [begin, end] = shareOf(count, elem, rank_, size_);
    if (begin == end) return;
    std::vector<const std::byte*> inputs;
    std::vector<std::byte*> outputs;
    for (int r = 0; r < size_; ++r) {
      inputs.push_back(views.in[static_cast<std::size_t>(r)] + begin * elem);
      outputs.push_back(views.out[static_cast<std::size_t>(r)] + begin * elem);
    }
    reduceToOutputs(outputs, inputs, end - begin, type, op, worthStreaming((end - begin) * elem));
  });
}

Result<void> ShmGroup::reduce(const GroupCall& call, const void* send, void* recv,
                              std::size_t count, DataType type, ReduceOp op, int root) {
  const std::size_t bytes = count * dataTypeSize(type);
  Plan plan;
  plan.desc = describeOp(OpKind::kReduce, type, op, root, count);
  plan.send = send;
  plan.sendBytes = bytes;
  plan.recv = recv;
  plan.recvBytes = rank_ == root ? bytes : 0;
  plan.peerInBytes = countBytes;
  plan.peerOutBytes = rootOnlyBytes;
  return runCollective(call, plan, [&](const Views& views) {
    const std::size_t elem = dataTypeSize(type);
    const auto [begin, end] = shareOf(count, elem, rank_, size_);
    if (begin == end) return;
    std::vector<const std::byte*> inputs;
    for (int r = 0; r < size_; ++r) {
      inputs.push_back(views.in[static_cast<std::size_t>(r)] + begin * elem);
    }
    std::byte* const output = views.out[static_cast<std::size_t>(root)] + begin * elem;
    reduceToOutputs(std::span(&output, 1), inputs, end - begin, type, op,
                    worthStreaming((end - begin) * elem));
  });
}

Result<void> ShmGroup::reduceScatter(const GroupCall& call, const void* send, void* recv,
                                     std::size_t recvCount, DataType type, ReduceOp op) {
  const std::size_t bytes = recvCount * dataTypeSize(type);
  Plan plan;
  plan.desc = describeOp(OpKind::kReduceScatter, type, op, 0, recvCount);
  plan.send = send;
  plan.sendBytes = bytes * static_cast<std::size_t>(size_);
  plan.recv = recv;
  plan.recvBytes = bytes;
  plan.peerInBytes = worldBytes;
  plan.peerOutBytes = countBytes;
  return runCollective(call, plan, [&](const Views& views) {
    if (bytes == 0) return;
    std::vector<const std::byte*> inputs;
    for (int r = 0; r < size_; ++r) {
      inputs.push_back(views.in[static_cast<std::size_t>(r)] +
                       static_cast<std::size_t>(rank_) * bytes);
    }
    std::byte* const output = views.out[static_cast<std::size_t>(rank_)];
    reduceToOutputs(std::span(&output, 1), inputs, recvCount, type, op, worthStreaming(bytes));
  });
}

Result<void> ShmGroup::allGather(const GroupCall& call, const void* send, void* recv,
                                 std::size_t sendCount, DataType type) {
  const std::size_t bytes = sendCount * dataTypeSize(type);
  if (useSlots(OpKind::kAllGather, bytes)) {
    return runInline(call, describeOp(OpKind::kAllGather, type, ReduceOp::kSum, 0, sendCount), send,
                     bytes, [&](std::span<const std::byte* const> inputs) {
                       auto* out = static_cast<std::byte*>(recv);
                       for (std::size_t r = 0; r < inputs.size() && bytes > 0; ++r) {
                         std::memcpy(out + r * bytes, inputs[r], bytes);
                       }
                     });
  }
  Plan plan;
  plan.desc = describeOp(OpKind::kAllGather, type, ReduceOp::kSum, 0, sendCount);
  plan.send = send;
  plan.sendBytes = bytes;
  plan.recv = recv;
  plan.recvBytes = bytes * static_cast<std::size_t>(size_);
  plan.peerInBytes = countBytes;
  plan.peerOutBytes = worldBytes;
  // Pull: rank r copies every rank's input into its own output, so it writes only local memory.
  return runCollective(call, plan, [&](const Views& views) {
    if (bytes == 0) return;
    std::byte* const output = views.out[static_cast<std::size_t>(rank_)];
    for (int step = 0; step < size_; ++step) {
      const int r = (rank_ + step) % size_;  // staggered so ranks read different peers
      std::byte* target = output + static_cast<std::size_t>(r) * bytes;
      const std::byte* source = views.in[static_cast<std::size_t>(r)];
      if (target != source) copyBytes(target, source, bytes, worthStreaming(bytes));
    }
    fenceStreamingStores(worthStreaming(bytes));
  });
}

Result<void> ShmGroup::allToAll(const GroupCall& call, const void* send, void* recv,
                                std::size_t countPerRank, DataType type) {
  const std::size_t bytes = countPerRank * dataTypeSize(type);
  const std::size_t total = bytes * static_cast<std::size_t>(size_);
  Plan plan;
  plan.desc = describeOp(OpKind::kAllToAll, type, ReduceOp::kSum, 0, countPerRank);
  plan.send = send;
  plan.sendBytes = total;
  plan.recv = recv;
  plan.recvBytes = total;
  // In place, a peer would read block p of my buffer while I overwrite it: copy my input aside.
  plan.stageSend = send == recv;
  plan.peerInBytes = worldBytes;
  plan.peerOutBytes = worldBytes;
  return runCollective(call, plan, [&](const Views& views) {
    if (bytes == 0) return;
    std::byte* const output = views.out[static_cast<std::size_t>(rank_)];
    for (int step = 0; step < size_; ++step) {
      const int r = (rank_ + step) % size_;
      copyBytes(output + static_cast<std::size_t>(r) * bytes,
                views.in[static_cast<std::size_t>(r)] + static_cast<std::size_t>(rank_) * bytes,
                bytes, worthStreaming(bytes));
    }
    fenceStreamingStores(worthStreaming(bytes));
  });
}

Result<void> ShmGroup::broadcast(const GroupCall& call, const void* send, void* recv,
                                 std::size_t count, DataType type, int root) {
  const std::size_t bytes = count * dataTypeSize(type);
  if (useSlots(OpKind::kBroadcast, bytes)) {
    return runInline(call, describeOp(OpKind::kBroadcast, type, ReduceOp::kSum, root, count), send,
                     rank_ == root ? bytes : 0, [&](std::span<const std::byte* const> inputs) {
                       if (bytes > 0 && !(rank_ == root && recv == send)) {
                         std::memcpy(recv, inputs[static_cast<std::size_t>(root)], bytes);
                       }
                     });
  }
  Plan plan;
  plan.desc = describeOp(OpKind::kBroadcast, type, ReduceOp::kSum, root, count);
  plan.send = send;
  plan.sendBytes = rank_ == root ? bytes : 0;
  plan.recv = recv;
  plan.recvBytes = bytes;
  plan.peerInBytes = rootOnlyBytes;
  plan.peerOutBytes = countBytes;
  return runCollective(call, plan, [&](const Views& views) {
    const std::byte* source = views.in[static_cast<std::size_t>(root)];
    std::byte* target = views.out[static_cast<std::size_t>(rank_)];
    if (bytes > 0 && target != source) copyBytes(target, source, bytes, worthStreaming(bytes));
    fenceStreamingStores(worthStreaming(bytes));
  });
}

Result<void> ShmGroup::barrier(const GroupCall& call) {
  return runInline(call, describeOp(OpKind::kBarrier, DataType::kU8, ReduceOp::kSum, 0, 0), nullptr,
                   0, [](std::span<const std::byte* const>) {});
}

}  // namespace torus::coll
