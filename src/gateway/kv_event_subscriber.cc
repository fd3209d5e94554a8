#include "gateway/kv_event_subscriber.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "util/log.h"

namespace brisk::gateway {

namespace {

using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A replay of every kept batch can be large (10,000 steps by default): it
// gets this long before it counts as failed, and a failed one is retried
// after kReplayRetry.
constexpr auto kReplayTimeout = 10s;
constexpr auto kReplayRetry = 1s;
// Live batches held while a replay runs; past this the replay starts over.
constexpr size_t kMaxPending = 100000;

}  // namespace

struct KvEventSubscriber::Sockets {
  struct Replica {
    zmq::socket_t sub;
    zmq::socket_t monitor;                // PAIR: the SUB socket's connect/disconnect events
    std::optional<zmq::socket_t> replay;  // DEALER, while a replay runs
    SteadyClock::time_point replay_deadline{};
    SteadyClock::time_point retry_at{};  // a failed replay is tried again then
    bool retry = false;
    int64_t next_seq = -1;  // -1: the next batch is taken as it comes
    bool dedupe = false;    // just replayed: live batches before next_seq are copies
    bool replayed_any = false;
    std::deque<std::pair<int64_t, std::string>> pending;  // live batches during a replay
  };
  zmq::context_t context{1};
  std::vector<Replica> replicas;
};

KvEventSubscriber::KvEventSubscriber(std::string tier, std::vector<KvEventSource> sources,
                                     KvBlockIndex* index)
    : tier_(std::move(tier)), sources_(std::move(sources)), index_(index) {}

Expected<std::unique_ptr<KvEventSubscriber>> KvEventSubscriber::Start(
    std::string tier, std::vector<KvEventSource> sources, KvBlockIndex* index) {
  std::unique_ptr<KvEventSubscriber> s(
      new KvEventSubscriber(std::move(tier), std::move(sources), index));
  s->sockets_ = std::make_unique<Sockets>();
  Sockets& z = *s->sockets_;
  for (size_t i = 0; i < s->sources_.size(); ++i) {
    const KvEventSource& src = s->sources_[i];
    s->shared_.push_back(std::make_unique<Shared>());
    try {
      zmq::socket_t sub(z.context, zmq::socket_type::sub);
      sub.set(zmq::sockopt::linger, 0);
      sub.set(zmq::sockopt::rcvhwm, 100000);
      sub.set(zmq::sockopt::subscribe, src.topic);
      const std::string monitor =
          fmt::format("inproc://kv-events-monitor-{}-{}", static_cast<const void*>(s.get()), i);
      if (zmq_socket_monitor(sub.handle(), monitor.c_str(),
                             ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0)
        throw zmq::error_t();
      zmq::socket_t pair(z.context, zmq::socket_type::pair);
      pair.connect(monitor);
      sub.connect(src.endpoint);
      Sockets::Replica rep;
      rep.sub = std::move(sub);
      rep.monitor = std::move(pair);
      z.replicas.push_back(std::move(rep));
    } catch (const zmq::error_t& e) {
      return InvalidArgument("tier '{}': KV events endpoint '{}': {}", s->tier_, src.endpoint,
                             e.what());
    }
    if (!src.replay_endpoint.empty()) {
      // Checked here so that a malformed endpoint is a start-up error, not
      // a replay that fails every second.
      try {
        zmq::socket_t probe(z.context, zmq::socket_type::dealer);
        probe.set(zmq::sockopt::linger, 0);
        probe.connect(src.replay_endpoint);
      } catch (const zmq::error_t& e) {
        return InvalidArgument("tier '{}': KV events replay endpoint '{}': {}", s->tier_,
                               src.replay_endpoint, e.what());
      }
    }
  }
  KvEventSubscriber* raw = s.get();
  s->thread_ = std::thread([raw] { raw->Run(); });
  return s;
}

KvEventSubscriber::~KvEventSubscriber() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool KvEventSubscriber::Live(int replica) const {
  return replica >= 0 && replica < num_replicas() && shared_[replica]->live.load();
}

bool KvEventSubscriber::AnyLive() const {
  for (const auto& s : shared_)
    if (s->live.load()) return true;
  return false;
}

KvEventReplicaStats KvEventSubscriber::stats(int replica) const {
  KvEventReplicaStats out;
  if (replica < 0 || replica >= num_replicas()) return out;
  const Shared& s = *shared_[replica];
  out.connected = s.connected.load();
  out.live = s.live.load();
  out.batches = s.batches.load();
  out.resyncs = s.resyncs.load();
  out.bad_batches = s.bad_batches.load();
  out.last_seq = s.last_seq.load();
  return out;
}

void KvEventSubscriber::Run() {
  auto& reps = sockets_->replicas;
  const int n = static_cast<int>(reps.size());
  std::vector<zmq::pollitem_t> items;
  std::vector<std::pair<int, int>> what;  // per item: (replica, 0 sub | 1 monitor | 2 replay)
  while (!stop_.load()) {
    items.clear();
    what.clear();
    for (int r = 0; r < n; ++r) {
      items.push_back({reps[r].sub.handle(), 0, ZMQ_POLLIN, 0});
      what.emplace_back(r, 0);
      items.push_back({reps[r].monitor.handle(), 0, ZMQ_POLLIN, 0});
      what.emplace_back(r, 1);
      if (reps[r].replay) {
        items.push_back({reps[r].replay->handle(), 0, ZMQ_POLLIN, 0});
        what.emplace_back(r, 2);
      }
    }
    try {
      zmq::poll(items.data(), items.size(), 100ms);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      log::Warn("gateway: tier '{}': KV events poll: {}", tier_, e.what());
      continue;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      const auto [r, kind] = what[i];
      Sockets::Replica& rep = reps[r];
      std::vector<zmq::message_t> frames;
      // A bounded number of messages per socket and wake-up keeps one busy
      // engine from starving the others' streams.
      for (int k = 0; k < 256; ++k) {
        frames.clear();
        zmq::socket_t* sock = kind == 0 ? &rep.sub : kind == 1 ? &rep.monitor : &*rep.replay;
        std::optional<size_t> got;
        try {
          got = zmq::recv_multipart(*sock, std::back_inserter(frames), zmq::recv_flags::dontwait);
        } catch (const zmq::error_t& e) {
          log::Warn("gateway: tier '{}' replica {}: KV events receive: {}", tier_, r, e.what());
          break;
        }
        if (!got) break;
        if (kind == 1) {
          if (frames.empty() || frames[0].size() < 2) continue;
          uint16_t event = 0;
          std::memcpy(&event, frames[0].data(), sizeof(event));
          if (event == ZMQ_EVENT_CONNECTED) {
            shared_[r]->connected = true;
            BeginResync(r, "connected");
          } else if (event == ZMQ_EVENT_DISCONNECTED) {
            shared_[r]->connected = false;
            shared_[r]->live = false;
          }
        } else if (kind == 0) {
          // [topic, sequence, payload]
          if (frames.size() != 3) continue;
          OnLive(r, DecodeKvEventSeq(frames[1].to_string_view()).value_or(-2),
                 frames[2].to_string_view());
        } else {
          // ["", sequence, payload] (a delimited request's answer)
          if (frames.size() == 3 && frames[0].size() == 0) frames.erase(frames.begin());
          if (frames.size() != 2) continue;
          OnReplayMessage(r, DecodeKvEventSeq(frames[0].to_string_view()).value_or(-2),
                          frames[1].to_string_view());
          if (!rep.replay) break;  // the end marker closed it
        }
      }
    }
    const auto now = SteadyClock::now();
    for (int r = 0; r < n; ++r) {
      Sockets::Replica& rep = reps[r];
      if (rep.replay && now > rep.replay_deadline) {
        log::Warn("gateway: tier '{}': replica {}'s KV events replay ({}) did not finish in {} s",
                  tier_, r, sources_[r].replay_endpoint,
                  std::chrono::duration_cast<std::chrono::seconds>(kReplayTimeout).count());
        rep.replay.reset();
        rep.pending.clear();
        rep.retry = true;
        rep.retry_at = now + kReplayRetry;
      }
      if (rep.retry && now >= rep.retry_at && shared_[r]->connected.load()) {
        rep.retry = false;
        BeginResync(r, "retry");
      }
    }
  }
}

void KvEventSubscriber::BeginResync(int r, const char* why) {
  Sockets::Replica& rep = sockets_->replicas[r];
  shared_[r]->live = false;
  shared_[r]->resyncs.fetch_add(1);
  index_->ClearReplica(r);
  rep.pending.clear();
  rep.dedupe = false;
  rep.replayed_any = false;
  rep.next_seq = -1;
  log::Info("gateway: tier '{}': re-learning replica {}'s KV cache ({})", tier_, r, why);
  if (sources_[r].replay_endpoint.empty()) {
    shared_[r]->live = shared_[r]->connected.load();
    return;
  }
  try {
    // A new socket per replay: a late answer to an earlier one cannot mix in.
    rep.replay.emplace(sockets_->context, zmq::socket_type::dealer);
    rep.replay->set(zmq::sockopt::linger, 0);
    rep.replay->connect(sources_[r].replay_endpoint);
    rep.replay->send(zmq::message_t(), zmq::send_flags::sndmore);
    rep.replay->send(zmq::buffer(EncodeKvEventSeq(0)), zmq::send_flags::none);
    rep.replay_deadline = SteadyClock::now() + kReplayTimeout;
  } catch (const zmq::error_t& e) {
    log::Warn("gateway: tier '{}': replica {}'s KV events replay: {}", tier_, r, e.what());
    rep.replay.reset();
    rep.retry = true;
    rep.retry_at = SteadyClock::now() + kReplayRetry;
  }
}

void KvEventSubscriber::OnLive(int r, int64_t seq, std::string_view payload) {
  Sockets::Replica& rep = sockets_->replicas[r];
  if (seq < 0) return;
  if (rep.replay) {
    if (rep.pending.size() >= kMaxPending) return BeginResync(r, "too many batches during replay");
    rep.pending.emplace_back(seq, std::string(payload));
    return;
  }
  if (rep.retry) return;  // not live until a replay succeeds
  if (rep.next_seq < 0 || seq == rep.next_seq) {
    rep.dedupe = false;
    return Apply(r, seq, payload);
  }
  if (seq < rep.next_seq && rep.dedupe) return;  // replayed already
  BeginResync(r, seq > rep.next_seq ? "a gap in sequence numbers" : "sequence numbers restarted");
}

void KvEventSubscriber::OnReplayMessage(int r, int64_t seq, std::string_view payload) {
  Sockets::Replica& rep = sockets_->replicas[r];
  if (seq == -1) return EndReplay(r);
  if (seq < 0) return;
  rep.replayed_any = true;
  Apply(r, seq, payload);
}

void KvEventSubscriber::EndReplay(int r) {
  Sockets::Replica& rep = sockets_->replicas[r];
  rep.replay.reset();
  rep.dedupe = rep.replayed_any;
  if (!rep.replayed_any) rep.next_seq = -1;  // nothing kept: take the next batch as it comes
  shared_[r]->live = shared_[r]->connected.load();
  std::deque<std::pair<int64_t, std::string>> pending;
  pending.swap(rep.pending);
  for (const auto& [seq, payload] : pending) {
    OnLive(r, seq, payload);
    if (rep.replay) return;  // that started another resync
  }
}

void KvEventSubscriber::Apply(int r, int64_t seq, std::string_view payload) {
  Sockets::Replica& rep = sockets_->replicas[r];
  rep.next_seq = seq + 1;
  shared_[r]->last_seq = seq;
  auto batch = DecodeKvEventBatch(payload);
  if (!batch.ok()) {
    if (shared_[r]->bad_batches.fetch_add(1) < 10)
      log::Warn("gateway: tier '{}': replica {}: KV event batch {} skipped: {}", tier_, r, seq,
                batch.status().message());
    return;
  }
  shared_[r]->batches.fetch_add(1);
  for (const DecodedKvEvent& e : batch->events) {
    switch (e.type) {
      case KvEvent::Type::kBlockStored:
        if (e.group == 0) index_->Stored(r, e.blocks);
        break;
      case KvEvent::Type::kBlockRemoved:
        if (e.group == 0) index_->Removed(r, e.blocks);
        break;
      case KvEvent::Type::kAllBlocksCleared: index_->ClearReplica(r); break;
    }
  }
}

}  // namespace brisk::gateway
