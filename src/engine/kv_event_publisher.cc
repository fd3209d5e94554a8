#include "engine/kv_event_publisher.h"

#include <chrono>
#include <iterator>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "util/log.h"

namespace brisk {
namespace {

bool Binds(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://");
}

}  // namespace

struct KvEventPublisher::Sockets {
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
  std::optional<zmq::socket_t> replay;
};

KvEventPublisher::KvEventPublisher(KvEventPublisherOptions options)
    : opts_(std::move(options)), sockets_(std::make_unique<Sockets>()) {}

Expected<std::unique_ptr<KvEventPublisher>> KvEventPublisher::Start(
    KvEventPublisherOptions options) {
  std::unique_ptr<KvEventPublisher> p(new KvEventPublisher(std::move(options)));
  Sockets& s = *p->sockets_;
  const std::string& ep = p->opts_.endpoint;
  try {
    s.pub.set(zmq::sockopt::sndhwm, p->opts_.high_water_mark);
    s.pub.set(zmq::sockopt::linger, 500);
    if (Binds(ep))
      s.pub.bind(ep);
    else
      s.pub.connect(ep);
  } catch (const zmq::error_t& e) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("KV events: cannot {} {}: {}", Binds(ep) ? "bind" : "connect to", ep,
                              e.what()));
  }
  if (!p->opts_.replay_endpoint.empty()) {
    try {
      s.replay.emplace(s.context, zmq::socket_type::router);
      s.replay->set(zmq::sockopt::linger, 0);
      s.replay->bind(p->opts_.replay_endpoint);
    } catch (const zmq::error_t& e) {
      return Status(StatusCode::kUnavailable, fmt::format("KV events: cannot bind {}: {}",
                                                          p->opts_.replay_endpoint, e.what()));
    }
  }
  KvEventPublisher* raw = p.get();
  p->thread_ = std::thread([raw] { raw->Run(); });
  return p;
}

KvEventPublisher::~KvEventPublisher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void KvEventPublisher::Publish(double ts, std::vector<KvEvent> events) {
  {
    std::lock_guard lock(mu_);
    const uint64_t seq = next_seq_++;
    if (static_cast<int>(queue_.size()) >= opts_.max_queue) {
      // Its sequence number is skipped: subscribers see the gap, and a
      // replay cannot fill it either, so they re-learn this engine.
      dropped_.fetch_add(1);
      return;
    }
    queue_.push_back({seq, ts, std::move(events)});
  }
  cv_.notify_one();
}

void KvEventPublisher::Run() {
  using namespace std::chrono_literals;
  // Set on shutdown: what is still queued gets a second to go out.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  for (;;) {
    std::deque<Queued> batch;
    bool stop = false;
    {
      std::unique_lock lock(mu_);
      // Replay requests are polled between waits: a short wait keeps them prompt.
      cv_.wait_for(lock, sockets_->replay ? 5ms : 100ms,
                   [&] { return stopping_ || !queue_.empty(); });
      batch.swap(queue_);
      stop = stopping_;
    }
    if (stop && !deadline) deadline = std::chrono::steady_clock::now() + 1s;
    for (const Queued& q : batch) {
      if (deadline && std::chrono::steady_clock::now() > *deadline) break;
      Send(q);
    }
    if (sockets_->replay) ServeReplay();
    if (stop) {
      std::lock_guard lock(mu_);
      if (queue_.empty() || std::chrono::steady_clock::now() > *deadline) break;
    }
  }
}

void KvEventPublisher::Send(const Queued& q) {
  const uint64_t seq = q.seq;
  std::string payload =
      EncodeKvEventBatch(q.ts, q.events, opts_.block_size, opts_.sliding_window, opts_.wire);
  try {
    auto& pub = sockets_->pub;
    pub.send(zmq::buffer(opts_.topic), zmq::send_flags::sndmore);
    pub.send(zmq::buffer(EncodeKvEventSeq(static_cast<int64_t>(seq))), zmq::send_flags::sndmore);
    pub.send(zmq::buffer(payload), zmq::send_flags::none);
    published_.fetch_add(1);
  } catch (const zmq::error_t& e) {
    log::Warn("KV events: sending batch {} failed: {}", seq, e.what());
  }
  buffer_.emplace_back(seq, std::move(payload));
  while (static_cast<int>(buffer_.size()) > opts_.buffer_steps) buffer_.pop_front();
}

void KvEventPublisher::ServeReplay() {
  auto& sock = *sockets_->replay;
  for (;;) {
    std::vector<zmq::message_t> frames;
    std::optional<size_t> n;
    try {
      n = zmq::recv_multipart(sock, std::back_inserter(frames), zmq::recv_flags::dontwait);
    } catch (const zmq::error_t& e) {
      log::Warn("KV events: replay request: {}", e.what());
      return;
    }
    if (!n) return;  // nothing waiting
    // [identity, "", start (8 bytes)] from a REQ; a DEALER may omit the "".
    if (frames.size() < 2 || frames.back().size() != 8) {
      log::Warn("KV events: a replay request of {} frames is not [identity, \"\", 8-byte start]",
                frames.size());
      continue;
    }
    const auto start = static_cast<uint64_t>(*DecodeKvEventSeq(frames.back().to_string_view()));
    const bool delimited = frames.size() >= 3;
    auto reply = [&](const std::string& seq, std::string_view payload) {
      sock.send(zmq::buffer(frames[0].data(), frames[0].size()), zmq::send_flags::sndmore);
      if (delimited) sock.send(zmq::message_t(), zmq::send_flags::sndmore);
      sock.send(zmq::buffer(seq), zmq::send_flags::sndmore);
      sock.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
    };
    try {
      for (const auto& [seq, payload] : buffer_) {
        if (seq >= start) reply(EncodeKvEventSeq(static_cast<int64_t>(seq)), payload);
      }
      reply(EncodeKvEventSeq(-1), "");
      replays_.fetch_add(1);
    } catch (const zmq::error_t& e) {
      log::Warn("KV events: replay answer: {}", e.what());
    }
  }
}

}  // namespace brisk
