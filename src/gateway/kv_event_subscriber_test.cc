// The KV event subscriber against a publisher in the test (PUB + ROUTER
// replay on loopback, vLLM's frames): live batches, the replay on connect, a
// gap, a restarted engine (sequence numbers from 0), garbage.
#include "gateway/kv_event_subscriber.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace brisk::gateway {
namespace {

using namespace std::chrono_literals;

ExternalBlockHash H(uint8_t n) {
  ExternalBlockHash h{};
  h[31] = n;
  return h;
}

std::string Stored(std::vector<uint8_t> blocks) {
  KvEvent e;
  for (uint8_t b : blocks) {
    e.block_hashes.push_back(H(b));
    e.token_ids.insert(e.token_ids.end(), {1, 2});
    e.salts.emplace_back();
  }
  return EncodeKvEventBatch(0, std::span(&e, 1), 2, 0, {});
}

std::string Cleared() {
  KvEvent e;
  e.type = KvEvent::Type::kAllBlocksCleared;
  return EncodeKvEventBatch(0, std::span(&e, 1), 2, 0, {});
}

// A publisher as an engine runs one: numbered batches on PUB, every batch
// kept for the ROUTER's replay. Answers replays from its own thread.
class TestPublisher {
 public:
  TestPublisher() : pub_(ctx_, zmq::socket_type::pub), router_(ctx_, zmq::socket_type::router) {
    pub_.set(zmq::sockopt::linger, 0);
    router_.set(zmq::sockopt::linger, 0);
    pub_.bind("tcp://127.0.0.1:*");
    router_.bind("tcp://127.0.0.1:*");
    endpoint_ = pub_.get(zmq::sockopt::last_endpoint);
    replay_endpoint_ = router_.get(zmq::sockopt::last_endpoint);
  }
  ~TestPublisher() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void StartReplay() {
    thread_ = std::thread([this] {
      while (!stop_) {
        std::vector<zmq::message_t> f;
        zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, 20ms);
        if (!(item.revents & ZMQ_POLLIN)) continue;
        if (!zmq::recv_multipart(router_, std::back_inserter(f))) continue;
        ++replays_;
        std::lock_guard lock(mu_);
        for (const auto& [seq, payload] : kept_) {
          router_.send(zmq::buffer(f[0].to_string()), zmq::send_flags::sndmore);
          router_.send(zmq::message_t(), zmq::send_flags::sndmore);
          router_.send(zmq::buffer(EncodeKvEventSeq(seq)), zmq::send_flags::sndmore);
          router_.send(zmq::buffer(payload), zmq::send_flags::none);
        }
        router_.send(zmq::buffer(f[0].to_string()), zmq::send_flags::sndmore);
        router_.send(zmq::message_t(), zmq::send_flags::sndmore);
        router_.send(zmq::buffer(EncodeKvEventSeq(-1)), zmq::send_flags::sndmore);
        router_.send(zmq::message_t(), zmq::send_flags::none);
      }
    });
  }
  // Keeps the batch for replay; sends it live unless `silent` (lost on the way).
  void Publish(const std::string& payload, bool silent = false) {
    std::lock_guard lock(mu_);
    kept_[seq_] = payload;
    if (!silent) {
      pub_.send(zmq::buffer(std::string("")), zmq::send_flags::sndmore);
      pub_.send(zmq::buffer(EncodeKvEventSeq(seq_)), zmq::send_flags::sndmore);
      pub_.send(zmq::buffer(payload), zmq::send_flags::none);
    }
    ++seq_;
  }
  // A restarted engine: its numbers from 0, nothing kept.
  void Restart() {
    std::lock_guard lock(mu_);
    kept_.clear();
    seq_ = 0;
  }

  std::string endpoint_, replay_endpoint_;
  std::atomic<int> replays_{0};

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t pub_, router_;
  std::mutex mu_;
  std::map<int64_t, std::string> kept_;
  int64_t seq_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
};

bool WaitFor(const std::function<bool()>& cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

std::vector<int32_t> Match(const KvBlockIndex& index, std::vector<KvBlockKey> keys) {
  return index.MatchPrefix(keys);
}

TEST(KvEventSubscriber, ReplaysOnConnectThenFollowsLiveBatches) {
  TestPublisher pub;
  pub.Publish(Cleared());
  pub.Publish(Stored({1, 2}));  // before the gateway came: only the replay has it
  pub.StartReplay();
  KvBlockIndex index(1, 1000);
  auto sub = KvEventSubscriber::Start("t", {{pub.endpoint_, pub.replay_endpoint_, ""}}, &index);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  ASSERT_TRUE(WaitFor([&] { return (*sub)->Live(0); }));
  EXPECT_EQ(Match(index, {1, 2, 3}), (std::vector<int32_t>{2}));
  // Live batches; the SUB socket may need a moment before its subscription
  // takes: publish until one arrives.
  ASSERT_TRUE(WaitFor([&] {
    pub.Publish(Stored({3}));
    return Match(index, {1, 2, 3})[0] == 3;
  }));
  const int64_t resyncs = (*sub)->stats(0).resyncs;
  // A batch lost on the way: the next one shows the gap, and the replay
  // fills it in.
  pub.Publish(Stored({4}), /*silent=*/true);
  pub.Publish(Stored({5}));
  ASSERT_TRUE(WaitFor([&] { return Match(index, {4})[0] == 1 && Match(index, {5})[0] == 1; }));
  EXPECT_GT((*sub)->stats(0).resyncs, resyncs);
  EXPECT_TRUE(WaitFor([&] { return (*sub)->Live(0); }));
}

TEST(KvEventSubscriber, ARestartedEngineIsReLearnt) {
  TestPublisher pub;
  pub.StartReplay();
  KvBlockIndex index(1, 1000);
  auto sub = KvEventSubscriber::Start("t", {{pub.endpoint_, pub.replay_endpoint_, ""}}, &index);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(WaitFor([&] {
    pub.Publish(Stored({1}));
    return Match(index, {1})[0] == 1;
  }));
  for (int i = 0; i < 20; ++i) pub.Publish(Stored({2}));
  ASSERT_TRUE(WaitFor([&] { return (*sub)->stats(0).last_seq >= 20; }));
  // The new process: its first batch clears (lost here, as a slow joiner
  // loses it), then numbers from 1 again.
  pub.Restart();
  pub.Publish(Cleared(), /*silent=*/true);
  pub.Publish(Stored({7}));
  ASSERT_TRUE(WaitFor([&] { return Match(index, {7})[0] == 1 && Match(index, {1})[0] == 0; }));
  EXPECT_TRUE(WaitFor([&] { return (*sub)->Live(0); }));
}

TEST(KvEventSubscriber, GarbageIsSkippedAndNoReplayMeansNewEventsOnly) {
  TestPublisher pub;  // no replay thread, and the subscriber is told of none
  KvBlockIndex index(1, 1000);
  auto sub = KvEventSubscriber::Start("t", {{pub.endpoint_, "", ""}}, &index);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(WaitFor([&] {
    pub.Publish("not msgpack at all");
    return (*sub)->stats(0).bad_batches > 0;
  }));
  pub.Publish(Stored({9}));
  ASSERT_TRUE(WaitFor([&] { return Match(index, {9})[0] == 1; }));
  EXPECT_TRUE((*sub)->Live(0));
}

TEST(KvEventSubscriber, BadEndpointsAreStartErrors) {
  KvBlockIndex index(1, 10);
  auto sub = KvEventSubscriber::Start("t", {{"tcp://no-port-here", "", ""}}, &index);
  EXPECT_FALSE(sub.ok());
  sub = KvEventSubscriber::Start("t", {{"tcp://127.0.0.1:1", "bogus://x", ""}}, &index);
  EXPECT_FALSE(sub.ok());
}

}  // namespace
}  // namespace brisk::gateway
