// Test fixture for the OpenAI front door (openai_server_test.cc and
// openai_server_surface_test.cc; header only, not part of the library): a
// second implementation of the engine-client seam written here (a scripted
// engine), the default model's prompt renderer, and a one-request HTTP client.
// If the server needed anything from the real engine beyond
// engine/engine_client.h, this would not compile or the answers would be
// wrong.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "model/gguf.h"
#include "server/openai_server.h"
#include "util/test_support.h"

namespace brisk::openai_server_test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using json = nlohmann::json;

// An engine that answers from a script, from its own thread (as a real engine
// does: never from inside Submit).
class ScriptedEngine final : public EngineClient {
 public:
  struct Submitted {
    int64_t id;
    GenerationRequest request;
  };
  // Each sample of each request gets these text pieces, one token each, then
  // finishes with `reason`.
  std::vector<std::string> pieces = {"Hel", "lo"};
  FinishReason reason = FinishReason::kStop;
  // A lazy constraint's trigger fired in pieces[trigger_piece] at byte
  // trigger_at (SequenceOutput::constrained_from); -1: never.
  int trigger_piece = -1;
  int64_t trigger_at = 0;
  bool hold = false;        // keep requests open until cancelled
  bool queue_full = false;  // Submit answers ResourceExhausted
  double retry_after_s = 7;
  EngineLoad load;

  ScriptedEngine() {
    thread_ = std::thread([this] { Run(); });
  }
  ~ScriptedEngine() override { Stop(); }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  EngineInfo info() const override { return {2048, 49152}; }
  Expected<int64_t> Submit(GenerationRequest request, OutputSink sink) override {
    if (queue_full) return ResourceExhausted("the interactive queue is full (3 waiting)");
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = next_id_++;
    submitted_.push_back({id, request});
    work_.push_back({id, std::move(request), std::move(sink)});
    cv_.notify_all();
    return id;
  }
  void Cancel(int64_t request_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.push_back(request_id);
    cv_.notify_all();
  }
  EngineLoad Load() const override { return load; }
  double RetryAfterSeconds(Priority) const override { return retry_after_s; }
  void SetStepObserver(StepObserver) override {}

  std::vector<Submitted> submitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  std::vector<int64_t> cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  bool WaitForSubmits(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (submitted().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  struct Work {
    int64_t id;
    GenerationRequest request;
    OutputSink sink;
  };
  void Emit(Work& w, bool cancelled) {
    for (int k = 0; k < w.request.n; ++k) {
      SequenceOutput out;
      out.request_id = w.id;
      out.index = k;
      if (cancelled) {
        out.finished = true;
        out.reason = FinishReason::kCancelled;
        w.sink(out, Status::Ok());
        continue;
      }
      for (size_t i = 0; i < pieces.size(); ++i) {
        out.new_tokens = {static_cast<int32_t>(100 + i)};
        out.text = pieces[i];
        out.constrained_from = static_cast<int>(i) == trigger_piece ? trigger_at : -1;
        out.finished = i + 1 == pieces.size();
        if (out.finished) {
          out.reason = reason;
          out.prompt_tokens = static_cast<int32_t>(w.request.prompt.size());
          out.completion_tokens = static_cast<int32_t>(pieces.size());
          out.cached_tokens = 1;
          out.queue_s = 0.001;
        }
        w.sink(out, Status::Ok());
      }
    }
  }
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      for (auto it = work_.begin(); it != work_.end();) {
        const bool cancelled =
            std::find(cancelled_.begin(), cancelled_.end(), it->id) != cancelled_.end();
        if (hold && !cancelled) {
          ++it;
          continue;
        }
        Work w = std::move(*it);
        it = work_.erase(it);
        lock.unlock();
        Emit(w, cancelled);
        lock.lock();
      }
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int64_t next_id_ = 1;
  std::deque<Work> work_;
  std::vector<Submitted> submitted_;
  std::vector<int64_t> cancelled_;
  std::thread thread_;
};

struct Reply {
  int status = 0;
  std::string body;
  std::string retry_after;
  std::string content_type;
  std::map<std::string, std::string> headers;  // names lowercased
};

class OpenAiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    auto file = GgufFile::Open(path);
    if (!file.ok()) BRISK_SKIP_OR_FAIL_MISSING(path);
    file_ = std::move(*file);
    auto tok = Tokenizer::FromGguf(*file_);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(*tok);
    auto r = PromptRenderer::FromGguf(*file_, *tok_);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    renderer_ = std::move(*r);
    config_.server.port = 0;
    config_.logging.access_log = false;
  }
  void TearDown() override {
    engine_.Stop();  // no sink calls after this: the server's contract
    server_.reset();
  }
  void StartServer() {
    auto s = OpenAiServer::Start(config_, engine_, *renderer_, "scripted-model", nullptr);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  Reply Call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& bearer = "") {
    net::io_context ioc;
    net::ip::tcp::socket sock(ioc);
    sock.connect({net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(server_->port())});
    bhttp::request<bhttp::string_body> req{method == "POST" ? bhttp::verb::post : bhttp::verb::get,
                                           target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    if (!bearer.empty()) req.set(bhttp::field::authorization, "Bearer " + bearer);
    if (!body.empty()) {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = body;
      req.prepare_payload();
    }
    bhttp::write(sock, req);
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(sock, buf, res);
    Reply r;
    r.status = res.result_int();
    r.body = res.body();
    r.retry_after = std::string(res[bhttp::field::retry_after]);
    r.content_type = std::string(res[bhttp::field::content_type]);
    for (const auto& f : res) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      r.headers[name] = std::string(f.value());
    }
    return r;
  }
  static std::vector<json> SseEvents(const std::string& body) {
    std::vector<json> out;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      const size_t end = body.find("\n\n", pos);
      const std::string data = body.substr(pos + 6, end - pos - 6);
      out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
      pos = end;
    }
    return out;
  }

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<PromptRenderer> renderer_;
  InferenceConfig config_;
  ScriptedEngine engine_;
  std::unique_ptr<OpenAiServer> server_;
};

inline const char* kChat =
    R"({"model":"scripted-model","messages":[{"role":"user","content":"Hi there"}]})";

}  // namespace brisk::openai_server_test
