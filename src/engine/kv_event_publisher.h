// Sends KV events (engine/kv_events.h) over ZeroMQ as vLLM's
// ZmqEventPublisher does, so a subscriber written for vLLM reads Brisk's:
//
//   PUB socket: one message per engine step with events, three frames:
//     topic, sequence number (8 bytes, big-endian, from 0 in each process),
//     msgpack EventBatch.
//   ROUTER socket (replay): a REQ/DEALER client sends the 8-byte big-endian
//     number of the first batch it missed; it gets [sequence, payload] for
//     every buffered batch from there, then [-1 as 8 signed bytes, ""].
//
// An endpoint with `*`, `::`, ipc:// or inproc:// is bound, any other is
// connected to (vLLM's rule). Publish() is thread-safe and never blocks on
// the network: the batches are encoded and sent on the publisher's thread,
// which also answers replay requests; a full queue drops the batch and
// counts it (the subscriber sees the gap in sequence numbers).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/kv_events.h"
#include "util/status.h"

namespace brisk {

struct KvEventPublisherOptions {
  std::string endpoint = "tcp://*:5557";
  std::string replay_endpoint = "tcp://*:5558";  // "": no replay socket
  std::string topic;
  int buffer_steps = 10000;  // batches kept for replay
  int max_queue = 100000;    // batches waiting to be sent
  int high_water_mark = 100000;
  int block_size = 16;
  int sliding_window = 0;
  KvEventWireOptions wire;
};

class KvEventPublisher {
 public:
  // Binds (or connects) both sockets; an address in use is an error here,
  // not later.
  static Expected<std::unique_ptr<KvEventPublisher>> Start(KvEventPublisherOptions options);
  // Sends what is queued (for at most a second), then closes the sockets.
  ~KvEventPublisher();
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  // Queues one batch (a step's events, taken at `ts`, seconds since the epoch).
  void Publish(double ts, std::vector<KvEvent> events);

  int64_t published() const { return published_.load(); }
  int64_t dropped() const { return dropped_.load(); }
  int64_t replays() const { return replays_.load(); }

 private:
  struct Sockets;
  explicit KvEventPublisher(KvEventPublisherOptions options);
  void Run();
  struct Queued {
    uint64_t seq;
    double ts;
    std::vector<KvEvent> events;
  };
  void Send(const Queued& q);
  void ServeReplay();

  KvEventPublisherOptions opts_;
  std::unique_ptr<Sockets> sockets_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  bool stopping_ = false;
  uint64_t next_seq_ = 0;  // the next batch's, given when it is queued
  std::deque<std::pair<uint64_t, std::string>> buffer_;  // for replay
  std::atomic<int64_t> published_{0}, dropped_{0}, replays_{0};
  std::thread thread_;
};

}  // namespace brisk
