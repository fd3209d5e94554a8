// Follows the KV events of a tier's engines (ZeroMQ, vLLM's wire format:
// engine/kv_event_publisher.h) into the tier's KvBlockIndex.
//
// One thread per tier polls, per replica: a SUB socket on the engine's event
// endpoint, a monitor of that socket (connected / disconnected) and, while a
// replay runs, a DEALER on the engine's replay endpoint.
//
// A replica's view is live once it is re-learnt: on every (re)connection, a
// gap in the sequence numbers, a number that goes back (a restarted engine
// counts from 0 again) or an undecodable batch, its keys are cleared and the
// engine's replay socket is asked for every batch it kept, from 0; batches
// that arrive on the SUB socket meanwhile wait and are applied after the
// replay's end marker if they follow it. Without a replay endpoint the view
// is cleared and re-learnt from new events only. A batch that does not
// decode is counted, logged and skipped. A replica whose stream is
// down, or whose replay failed (retried after a second), is not live: the
// gateway routes as if it held nothing and, when no replica is live, falls
// back to consistent-hash affinity (replica_picker.h).
//
// Only the full-attention group (0) is indexed: a sliding-window model's
// prefix stays reusable after its blocks leave the window (group 1).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gateway/kv_block_index.h"
#include "util/status.h"

namespace brisk::gateway {

struct KvEventSource {
  std::string endpoint;         // tcp://host:5557 (the engine's cache.kv_events.endpoint)
  std::string replay_endpoint;  // tcp://host:5558; "" = none
  std::string topic;            // the engine's cache.kv_events.topic
};

struct KvEventReplicaStats {
  bool connected = false;
  bool live = false;
  int64_t batches = 0;  // applied, live or replayed
  int64_t resyncs = 0;  // times the view was cleared and re-learnt
  int64_t bad_batches = 0;
  int64_t last_seq = -1;
};

class KvEventSubscriber {
 public:
  // Starts following `sources` (source i is replica i of `index`).
  static Expected<std::unique_ptr<KvEventSubscriber>> Start(std::string tier,
                                                            std::vector<KvEventSource> sources,
                                                            KvBlockIndex* index);
  ~KvEventSubscriber();
  KvEventSubscriber(const KvEventSubscriber&) = delete;
  KvEventSubscriber& operator=(const KvEventSubscriber&) = delete;

  int num_replicas() const { return static_cast<int>(shared_.size()); }
  // Whether replica r's view is current (connected and re-learnt).
  bool Live(int replica) const;
  bool AnyLive() const;
  KvEventReplicaStats stats(int replica) const;

 private:
  struct Shared {  // what other threads read of a replica's stream
    std::atomic<bool> connected{false}, live{false};
    std::atomic<int64_t> batches{0}, resyncs{0}, bad_batches{0}, last_seq{-1};
  };
  struct Sockets;  // the ZeroMQ context and sockets (the thread's own)
  KvEventSubscriber(std::string tier, std::vector<KvEventSource> sources, KvBlockIndex* index);
  void Run();
  void BeginResync(int r, const char* why);
  void OnLive(int r, int64_t seq, std::string_view payload);
  void OnReplayMessage(int r, int64_t seq, std::string_view payload);
  void EndReplay(int r);
  void Apply(int r, int64_t seq, std::string_view payload);

  const std::string tier_;
  const std::vector<KvEventSource> sources_;
  KvBlockIndex* index_;
  std::vector<std::unique_ptr<Shared>> shared_;
  std::unique_ptr<Sockets> sockets_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace brisk::gateway
