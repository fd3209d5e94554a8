// Internals of http_server.h: the state shared by listener and connections, and one connection.
// Not for use outside src/server/http_*.
//
// Lifetime: the Server, every Connection and (through its Connection) every Responder hold the
// ServerCore, which owns the io_context. So a Responder kept by the engine after the Server is
// gone still points at live objects; ServerCore::stopped makes its calls no-ops.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "http/body_budget.h"
#include "http/chunked_guard.h"
#include "http/server.h"

namespace brisk::http::internal {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

class Connection;

struct ServerCore : std::enable_shared_from_this<ServerCore> {
  ServerCore(ServerOptions o, Handler h);

  Status Listen();
  void DoAccept();  // acceptor strand
  void RunIoThread();
  void StopAccepting();
  void Shutdown();  // Server::Stop before joining: refuse posts, close listener and connections
  void Unregister(uint64_t id);

  const ServerOptions opts;
  const Handler handler;
  const int max_connections;  // opts.max_connections capped by the file limit
  const std::shared_ptr<BodyBudget> body_budget;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work;
  const net::strand<net::io_context::executor_type> accept_strand;
  tcp::acceptor acceptor;          // on accept_strand
  net::steady_timer accept_retry;  // same strand: backoff after accept errors (EMFILE)
  int port = 0;

  // Responder posts take this shared; Shutdown takes it exclusively to set `stopped`, so after
  // Stop nothing new enters the io_context queue (which would keep connections alive forever).
  std::shared_mutex post_mu;
  bool stopped = false;

  std::atomic<int> num_connections{0};

 private:
  void OnAccept(beast::error_code ec, tcp::socket socket);
  void RejectBusy(tcp::socket socket);
  // Out of descriptors: gives up the spare one to accept a pending connection, answer 503 and
  // close it. False if there was none to give up or nothing to accept.
  bool RejectWithSpareFd();
  std::vector<std::shared_ptr<Connection>> Snapshot();  // mu held
  void CloseListener();                                 // acceptor strand

  std::mutex mu;  // guards the fields below
  bool draining = false;
  bool stopping = false;
  uint64_t next_id = 0;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> conns;
  int spare_fd = -1;  // acceptor strand; /dev/null held for RejectWithSpareFd
};

// The effective connection cap for `requested` (0: none asked) under the file limit `nofile`.
int ConnectionCap(int requested, uint64_t nofile);

// One client connection. Every method except Post runs on the connection's strand.
//
// One request at a time: kReading (parse into `parser_`) -> kResponding (handler called; the
// Responder queues output; bytes that arrive meanwhile are kept for the next request) ->
// kReading again on keep-alive, or kLingering (send side shut, input drained briefly so the
// client sees our last response rather than a reset) -> kClosed.
//
// Reading a request: the header section is scanned as bytes arrive (bounded by
// max_header_bytes, no line folding) before the parser sees it; then CheckHeader (strictness, Host,
// the on_headers hook, the body budget); then the body, each chunked byte first through `guard_`.
// The parser consumes body data as it comes, so the input buffer only ever holds one framing
// element in progress plus one read.
//
// Disconnects follow the rules in http_server.h: `peer_eof_` (half-close, served), a probe
// (interim 100) to tell a closed client by its reset, `WaitError` for that reset, and a
// poll timer while reading is paused.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ServerCore> core, tcp::socket socket, uint64_t id);

  void Start();
  void Drain();  // StopAccepting
  void Close();  // fires OnClose if a response was pending

  // From any thread: runs `fn` on the strand unless the server stopped. Returns false if
  // dropped.
  template <typename Fn>
  bool Post(Fn&& fn) {
    std::shared_lock lock(core_->post_mu);
    if (core_->stopped) return false;
    net::post(executor_, std::forward<Fn>(fn));
    return true;
  }
  const net::any_io_executor& executor() const { return executor_; }

  // Responder operations, on the strand; ignored unless `seq` is the current request.
  void DoSend(uint64_t seq, int status, Headers headers, std::string body);
  void DoStartStream(uint64_t seq, int status, Headers headers);
  void DoWrite(uint64_t seq, std::string data);
  void DoEnd(uint64_t seq, Headers trailers = {});
  void OnResponderDropped(uint64_t seq);

  // Posted-but-unprocessed Write payloads plus output queued for the socket.
  std::atomic<size_t> pending_bytes{0};

 private:
  enum class Phase { kReading, kResponding, kLingering, kClosed };
  enum class Reply { kNone, kStreaming, kComplete };
  enum class Framing { kNone, kLength, kChunked, kUntilClose };

  void BeginRequest();
  void WaitRead();
  void OnReadable(beast::error_code ec);
  void OnPeerEof();
  void SendProbe();
  void WaitError();
  void OnErrorWait(beast::error_code ec);
  void ArmPausePoll();
  void OnPausePoll(beast::error_code ec);
  void ParseRequest();
  bool ScanHeader();   // false: rejected
  bool FeedGuard();    // false: rejected
  bool CheckHeader();  // false: rejected or answered early
  bool CheckHosts(const beast::http::request_parser<beast::http::string_body>::value_type& h);
  void Dispatch();
  // An error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}, then close.
  void Reject(int status, std::string_view text, std::string_view code = {}, Headers extra = {});
  // Any response to the current request, sent at once with "Connection: close".
  void AnswerAndClose(int status, Headers headers, std::string body);
  void ArmTimer(Clock::time_point when);
  void DisarmTimer();
  void OnTimer(uint64_t gen, beast::error_code ec);
  std::string BuildHead(int status, const Headers& headers, Framing framing, size_t length);
  void Enqueue(std::string data);
  void StartWrite();
  void OnWritten(beast::error_code ec);
  void OnReplyComplete();
  void OnResponseFlushed();
  void BeginLinger();
  bool Current(uint64_t seq) const { return phase_ == Phase::kResponding && seq == seq_; }

  const std::shared_ptr<ServerCore> core_;  // first: destroyed last
  const net::any_io_executor executor_;     // the strand
  tcp::socket socket_;
  net::steady_timer timer_;
  net::steady_timer pause_timer_;  // polls the socket while reading is paused
  const uint64_t id_;
  std::string remote_;

  // Input.
  beast::flat_buffer in_;
  std::optional<beast::http::request_parser<beast::http::string_body>> parser_;
  bool read_waiting_ = false;
  bool error_waiting_ = false;
  bool pause_polling_ = false;
  bool peer_eof_ = false;         // the client shut its sending side (read returned EOF)
  bool probe_sent_ = false;       // an interim 100 went out to provoke a reset
  bool request_started_ = false;  // a byte of the current request arrived
  bool header_checked_ = false;
  // The header section is scanned once, byte by byte, before the parser sees it: its end, its
  // size, obsolete line folding (which the parser would accept).
  size_t header_scanned_ = 0;  // bytes at the front of `in_` already scanned
  size_t header_bytes_ = 0;    // header section bytes so far, consumed or not
  uint32_t header_tail_ = 0;   // the last four bytes scanned, to find CRLFCRLF
  bool header_end_seen_ = false;
  std::optional<Request> head_req_;  // the parsed head, from CheckHeader to Dispatch
  std::optional<ChunkedGuard> guard_;
  size_t guard_scanned_ = 0;  // bytes at the front of `in_` already fed to `guard_`
  std::shared_ptr<BodyLease> lease_;
  bool chunked_body_ = false;
  size_t linger_discarded_ = 0;

  // Current request / response.
  Phase phase_ = Phase::kReading;
  Reply reply_ = Reply::kNone;
  uint64_t seq_ = 0;
  std::weak_ptr<Responder> responder_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool head_ = false;
  bool chunked_ = false;
  bool draining_ = false;

  // Output: out_[0, writing_count_) is in flight.
  std::deque<std::string> out_;
  size_t writing_count_ = 0;
  size_t writing_bytes_ = 0;

  uint64_t timer_gen_ = 0;
};

}  // namespace brisk::http::internal
