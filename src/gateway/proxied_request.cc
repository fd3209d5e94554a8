#include "gateway/proxied_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <charconv>
#include <cmath>

#include "gateway/budget.h"
#include "gateway/dashboard.h"
#include "gateway/json_fields.h"
#include "gateway/shared_responses.h"
#include "http/openai_error.h"
#include "http/responses_items.h"
#include "util/log.h"

namespace brisk::gateway {

using Json = nlohmann::json;

namespace {

// A buffered upstream answer larger than this is an upstream fault.
constexpr size_t kMaxBufferedAnswer = size_t{64} << 20;

std::string_view HeaderValue(const http::Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return v;
    }
  }
  return {};
}

double RetryAfterSeconds(const http::Headers& headers) {
  std::string_view v = HeaderValue(headers, "retry-after");
  double s = 1;
  if (!v.empty()) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
    if (ec != std::errc() || s < 0) s = 1;
  }
  return s;
}

bool WantsFlag(const Json& body, const char* object, const char* key) {
  auto it = body.find(object);
  if (it == body.end() || !it->is_object()) return false;
  auto v = it->find(key);
  return v != it->end() && v->is_boolean() && v->get<bool>();
}

ClientWants ReadWants(const Json& body) {
  ClientWants w;
  w.include_usage = WantsFlag(body, "stream_options", "include_usage");
  w.continuous_usage = WantsFlag(body, "stream_options", "continuous_usage_stats");
  auto lp = body.find("logprobs");
  w.logprobs = lp != body.end() && ((lp->is_boolean() && lp->get<bool>()) ||
                                    (lp->is_number_integer() && lp->get<int64_t>() >= 0));
  return w;
}

}  // namespace

const char* EndpointPath(Endpoint e) {
  switch (e) {
    case Endpoint::kChat: return "/v1/chat/completions";
    case Endpoint::kCompletions: return "/v1/completions";
    case Endpoint::kResponses: return "/v1/responses";
    case Endpoint::kTokenize: return "/tokenize";
    case Endpoint::kDetokenize: return "/detokenize";
  }
  return "";
}

const char* EndpointName(Endpoint e) {
  switch (e) {
    case Endpoint::kChat: return "chat.completions";
    case Endpoint::kCompletions: return "completions";
    case Endpoint::kResponses: return "responses";
    case Endpoint::kTokenize: return "tokenize";
    case Endpoint::kDetokenize: return "detokenize";
  }
  return "";
}

ProxiedRequest::ProxiedRequest(std::shared_ptr<GatewayCore> core,
                               std::shared_ptr<http::Responder> res, Endpoint endpoint, Json body,
                               Caller caller, RoutePlan plan, uint64_t affinity_key,
                               Clock::time_point arrival, std::string request_id,
                               std::shared_ptr<const ResponsesTurn> turn)
    : core_(std::move(core)),
      res_(std::move(res)),
      endpoint_(endpoint),
      body_(std::move(body)),
      caller_(std::move(caller)),
      plan_(std::move(plan)),
      affinity_key_(affinity_key),
      arrival_(arrival),
      request_id_(std::move(request_id)),
      client_stream_(BoolOr(body_, "stream", false)),
      wants_(ReadWants(body_)),
      // Built only where an answer can be judged: a cascade with a tier after
      // this one that escalates on answers failing their response_format.
      answer_check_(plan_.tiers.size() > 1 && core_->config.routing.cascade.escalate_on_invalid_json
                        ? AnswerCheck::FromRequest(body_)
                        : AnswerCheck()),
      turn_(std::move(turn)),
      stages_(arrival, caller_.traceparent) {
  if (!answer_check_.skipped().empty()) {
    log::Debug("gateway: request {}: its schema is not checked ({}); only that the answer is JSON",
               request_id_, answer_check_.skipped());
  }
}

TierRuntime& ProxiedRequest::Tier() const {
  return on_candidate_ ? *arm_.candidate : *core_->tiers[plan_.tiers[tier_pos_]];
}

void ProxiedRequest::Start(Budgets::Reservation reservation) {
  reservation_ = std::move(reservation);
  std::weak_ptr<ProxiedRequest> weak = weak_from_this();
  res_->OnClose([weak] {
    if (auto self = weak.lock()) self->OnClientGone();
  });
  std::lock_guard lock(mu_);
  stages_.Started(Clock::now());
  EnterTier();
  TryNext();
}

Json ProxiedRequest::UpstreamBody(bool stream) const {
  Json b = body_;
  b["model"] = Tier().Model();
  if (endpoint_ == Endpoint::kTokenize || endpoint_ == Endpoint::kDetokenize) return b;
  if (shadow_seed_ >= 0) b["seed"] = shadow_seed_;
  if (endpoint_ == Endpoint::kResponses) {
    // The usage comes in response.completed; the gateway keeps the response.
    b["stream"] = stream;
    b["store"] = false;
    return b;
  }
  if (stream) {
    b["stream"] = true;
    Json& so = b["stream_options"];
    if (!so.is_object()) so = Json::object();
    so["include_usage"] = true;
    if (Tier().config->upstreams[0].type == "brisk") so["continuous_usage_stats"] = true;
  } else {
    b["stream"] = false;
    b.erase("stream_options");
  }
  if (!LastTier() && core_->config.routing.cascade.min_mean_logprob < 0 && !wants_.logprobs) {
    // The cascade judges confidence by the answer's token logprobs.
    if (endpoint_ == Endpoint::kChat) {
      b["logprobs"] = true;
    } else {
      b["logprobs"] = 0;
    }
  }
  return b;
}

void ProxiedRequest::TryNext() {
  if (finished_ || client_gone_) return;
  TierRuntime& tier = Tier();
  const std::string model = tier.Model();
  if (model.empty()) {
    SendError(503, "server_error",
              fmt::format("tier '{}' has no reachable upstream yet (its model id is unknown)",
                          tier.config->name),
              "upstream_unavailable", {{"Retry-After", "1"}});
    return;
  }
  if (prefix_pending_ || (tier_attempts_ == 0 && LookUpPrefix())) return;  // it calls back
  const auto now = Clock::now();
  std::optional<int> pick;
  const PrefixMatch* prefix = prefix_ && prefix_tier_pos_ == tier_pos_ ? &*prefix_ : nullptr;
  if (tier_attempts_ < core_->config.replicas.max_attempts) {
    std::lock_guard tl(tier.mu);
    pick = tier.picker.Pick(affinity_key_, tried_, now, prefix);
    if (pick) tier.picker.Started(*pick);
  }
  if (pick && prefix && tier_attempts_ == 0) CountCachedPrefix(*prefix, *pick);
  if (!pick && on_candidate_ && !client_started_) {
    FallBackToBaseline();
    return TryNext();
  }
  if (!pick) {
    if (min_retry_after_s_ >= 0) {
      const int secs = std::max(1, static_cast<int>(std::ceil(min_retry_after_s_)));
      SendError(429, "rate_limit_exceeded",
                fmt::format("every replica of tier '{}' is at capacity; retry after {} s",
                            tier.config->name, secs),
                "rate_limit_exceeded", {{"Retry-After", std::to_string(secs)}});
    } else {
      SendError(tried_.empty() ? 503 : 502, "server_error",
                tried_.empty() ? fmt::format("no healthy upstream in tier '{}'", tier.config->name)
                               : fmt::format("tier '{}': {} upstream attempt(s) failed; last: {}",
                                             tier.config->name, tried_.size(), last_error_),
                "upstream_unavailable", {{"Retry-After", "1"}});
    }
    return;
  }
  if (!tried_.empty()) core_->metrics->Retries(tier.config->name)->Inc();
  replica_ = *pick;
  stages_.Picked(Clock::now());
  tried_.push_back(replica_);
  ++tier_attempts_;
  ++total_attempts_;
  const int attempt = ++attempt_;
  buffering_ = !client_stream_ || !LastTier() || endpoint_ == Endpoint::kTokenize ||
               endpoint_ == Endpoint::kDetokenize;
  head_ok_ = false;
  upstream_status_ = 0;
  upstream_headers_.clear();
  buffer_.clear();
  rewriter_.reset();

  http::UpstreamRequest req;
  req.path = EndpointPath(endpoint_);
  req.headers = {{"Content-Type", "application/json"},
                 {"X-Request-Id", request_id_},
                 {"traceparent", stages_.UpstreamTraceparent()}};
  const UpstreamConfig& up = tier.config->upstreams[replica_];
  if (!up.api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + up.api_key});
  req.body = UpstreamBody(!buffering_).dump(-1, ' ', false, Json::error_handler_t::replace);

  auto self = shared_from_this();
  http::UpstreamCallbacks cb;
  // One boundary for exceptions (from the JSON library, on an upstream's
  // bytes): they end this request with an error, never the process.
  cb.on_head = [self, attempt](int status, const http::Headers& headers) {
    self->Guarded([&] { self->OnHead(attempt, status, headers); });
  };
  cb.on_data = [self, attempt](std::string_view data) {
    self->Guarded([&] { self->OnData(attempt, data); });
  };
  cb.on_connected = [self, attempt](bool) {
    std::lock_guard lock(self->mu_);
    if (attempt == self->attempt_) self->stages_.Connected(Clock::now());
  };
  cb.on_trailers = [self, attempt](const http::Headers& trailers) {
    std::lock_guard lock(self->mu_);
    if (attempt == self->attempt_)
      self->stages_.UpstreamTiming(HeaderValue(trailers, "server-timing"));
  };
  cb.on_done = [self, attempt](const Status& st) {
    self->Guarded([&] { self->OnDone(attempt, st); });
  };
  call_ = tier.clients[replica_]->Send(std::move(req), std::move(cb));
}

void ProxiedRequest::Guarded(const std::function<void()>& step) {
  try {
    step();
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    log::Error("gateway: request {}: internal error on an upstream answer: {}", request_id_,
               e.what());
    if (call_) call_->Cancel();
    if (!finished_ && !client_gone_) {
      SendError(502, "server_error", "the gateway could not process the upstream's answer",
                "bad_upstream_answer");
    }
  }
}

void ProxiedRequest::OnHead(int attempt, int status, const http::Headers& headers) {
  std::lock_guard lock(mu_);
  if (attempt != attempt_) return;
  upstream_status_ = status;
  upstream_headers_ = headers;
  head_ok_ = true;
  stages_.UpstreamTiming(HeaderValue(headers, "server-timing"));
  if (status == 200 && !buffering_) {
    rewriter_ = endpoint_ == Endpoint::kResponses ? std::make_unique<StreamRewriter>(Patch())
                                                  : std::make_unique<StreamRewriter>(wants_);
  }
}

void ProxiedRequest::OnData(int attempt, std::string_view data) {
  std::lock_guard lock(mu_);
  if (attempt != attempt_ || finished_ || client_gone_) return;
  if (!rewriter_) {
    if (buffer_.size() + data.size() <= kMaxBufferedAnswer) buffer_.append(data);
    return;
  }
  std::string out;
  const int64_t chunks_before = rewriter_->facts().content_chunks;
  rewriter_->Feed(data, &out);
  if (chunks_before == 0 && rewriter_->facts().content_chunks > 0) first_token_ = Clock::now();
  if (out.empty()) return;
  if (!client_started_) {
    client_started_ = true;
    answer_tier_ = Tier().config->name;
    answer_upstream_ = Tier().names[replica_];
    res_->StartStream(200, StreamHeaders());
  }
  res_->Write(std::move(out));
}

void ProxiedRequest::OnDone(int attempt, const Status& st) {
  std::lock_guard lock(mu_);
  if (attempt != attempt_) return;
  call_.reset();
  stages_.UpstreamDone(Clock::now());
  TierRuntime& tier = Tier();
  // A 429 (full) or a cancel (the client left) says nothing of the replica's
  // health: neither a failure nor a success.
  const bool cancelled = st.code() == StatusCode::kCancelled;
  RequestOutcome outcome = RequestOutcome::kOk;
  if (cancelled || upstream_status_ == 429) {
    outcome = RequestOutcome::kBusy;
  } else if (!st.ok() || upstream_status_ >= 500) {
    outcome = RequestOutcome::kFailure;
  }
  {
    std::lock_guard tl(tier.mu);
    tier.picker.Finished(replica_, outcome, Clock::now());
  }
  if (client_gone_ || finished_) return;
  if (!st.ok()) {
    last_error_ = fmt::format("{} ({})", st.message(), tier.names[replica_]);
    if (!client_started_) {
      if (rewriter_) ChargeAttempt(rewriter_->facts());  // tokens made before the break
      TryNext();
      return;
    }
    ChargeAttempt(rewriter_->facts());
    log::Warn("gateway: request {}: upstream {} broke off mid-stream: {}", request_id_,
              tier.names[replica_], st.message());
    auto res = res_;
    res_->Write(http::OpenAiErrorEvent(http::MakeOpenAiError(
        502, "server_error",
        fmt::format("the upstream answering this stream failed: {}", st.message()))));
    Finish(502, "error", [res] { res->End(); });
    return;
  }
  if (upstream_status_ == 429) {
    const double s = RetryAfterSeconds(upstream_headers_);
    min_retry_after_s_ = min_retry_after_s_ < 0 ? s : std::min(min_retry_after_s_, s);
    TryNext();
    return;
  }
  if (upstream_status_ >= 500 && !client_started_) {
    last_error_ = fmt::format("HTTP {} from {}: {}", upstream_status_, tier.names[replica_],
                              buffer_.substr(0, 200));
    TryNext();
    return;
  }
  if (upstream_status_ != 200) {  // the upstream's answer (a 4xx) goes back as it is
    auto res = res_;
    std::string body = std::move(buffer_);
    const int status = upstream_status_;
    std::string ctype(HeaderValue(upstream_headers_, "content-type"));
    if (ctype.empty()) ctype = "application/json";
    answer_tier_ = tier.config->name;
    answer_upstream_ = tier.names[replica_];
    Finish(status, "error", [res, status, ctype, body = std::move(body), id = request_id_] {
      res->Send(status, {{"Content-Type", ctype}, {"X-Request-Id", id}}, body);
    });
    return;
  }
  if (rewriter_) {
    ChargeAttempt(rewriter_->facts());
    finish_reason_ = rewriter_->facts().finish_reason;
    answer_text_ = rewriter_->facts().text;
    std::string tail = rewriter_->Finish(Annotation());
    if (ShouldStore(rewriter_->final_response())) stored_response_ = *rewriter_->final_response();
    if (!client_started_) {
      client_started_ = true;
      answer_tier_ = tier.config->name;
      answer_upstream_ = tier.names[replica_];
      res_->StartStream(200, StreamHeaders());
    }
    auto res = res_;
    Finish(200, "completed", [res, self = shared_from_this(), tail = std::move(tail)]() mutable {
      res->Write(std::move(tail));
      res->End({{"Server-Timing", self->FinishStages(200)}});
    });
    return;
  }
  OnBufferedAnswer();
}

bool ProxiedRequest::ShouldEscalate(const AnswerFacts& facts, std::string* why) const {
  const CascadeConfig& c = core_->config.routing.cascade;
  if (answer_check_.active()) {
    std::string detail;
    if (std::string failed = answer_check_.Check(facts.text, &detail); !failed.empty()) {
      *why = detail.empty() ? failed : fmt::format("{}: {}", failed, detail);
      return true;
    }
    if (facts.finish_reason == "length") {
      *why = "truncated";
      return true;
    }
  }
  if (c.min_mean_logprob < 0 && facts.logprob_count > 0) {
    const double mean = facts.logprob_sum / static_cast<double>(facts.logprob_count);
    if (mean < c.min_mean_logprob) {
      *why = fmt::format("low_confidence:{:.3f}", mean);
      return true;
    }
  }
  return false;
}

void ProxiedRequest::OnBufferedAnswer() {
  TierRuntime& tier = Tier();
  Json answer = Json::parse(buffer_, nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    last_error_ = fmt::format("{} sent an answer that is not JSON", tier.names[replica_]);
    TryNext();
    return;
  }
  buffer_.clear();
  if (endpoint_ == Endpoint::kTokenize || endpoint_ == Endpoint::kDetokenize) {
    answer_tier_ = tier.config->name;
    answer_upstream_ = tier.names[replica_];
    first_token_ = Clock::now();
    auto res = res_;
    auto self = shared_from_this();
    client_started_ = true;
    Finish(200, "completed",
           [res, self, body = answer.dump(-1, ' ', false, Json::error_handler_t::replace)] {
             res->Send(200,
                       {{"Content-Type", "application/json"},
                        {"X-Request-Id", self->request_id_},
                        {"X-Brisk-Tier", self->answer_tier_},
                        {"X-Brisk-Upstream", self->answer_upstream_},
                        {"Server-Timing", self->FinishStages(200)}},
                       body);
           });
    return;
  }
  const AnswerFacts facts =
      endpoint_ == Endpoint::kResponses ? ReadResponseObject(answer) : ReadAnswer(answer);
  ChargeAttempt(facts);
  std::string why;
  if (!LastTier() && ShouldEscalate(facts, &why)) {
    Escalate(why);
    return;
  }
  finish_reason_ = facts.finish_reason;
  answer_text_ = facts.text;
  answer_tier_ = tier.config->name;
  answer_upstream_ = tier.names[replica_];
  first_token_ = Clock::now();
  const CostAnnotation cost = Annotation();
  if (endpoint_ == Endpoint::kResponses) {
    PatchResponse(&answer, Patch(), &cost);
    if (ShouldStore(&answer)) stored_response_ = answer;
  } else {
    AnnotateAnswer(&answer, cost, wants_.logprobs);
  }
  auto res = res_;
  http::Headers headers = {{"X-Request-Id", request_id_},
                           {"X-Brisk-Tier", answer_tier_},
                           {"X-Brisk-Upstream", answer_upstream_},
                           {"X-Brisk-Route", plan_.reason},
                           {"X-Brisk-Cost-Usd", fmt::format("{:.9f}", cost.cost_usd)},
                           {"X-Brisk-Escalations", std::to_string(escalations_)},
                           {"traceparent", stages_.trace().Traceparent()}};
  auto self = shared_from_this();
  if (client_stream_) {
    std::string sse = AnswerAsStream(answer, endpoint_ == Endpoint::kChat, wants_, cost);
    headers.push_back({"Content-Type", "text/event-stream"});
    client_started_ = true;
    headers.push_back({"Trailer", "Server-Timing"});
    Finish(200, "completed", [res, self, headers, sse = std::move(sse)]() mutable {
      res->StartStream(200, headers);
      res->Write(std::move(sse));
      res->End({{"Server-Timing", self->FinishStages(200)}});
    });
    return;
  }
  headers.push_back({"Content-Type", "application/json"});
  client_started_ = true;
  Finish(200, "completed",
         [res, self, headers,
          body = answer.dump(-1, ' ', false, Json::error_handler_t::replace)]() mutable {
           headers.push_back({"Server-Timing", self->FinishStages(200)});
           res->Send(200, headers, body);
         });
}

void ProxiedRequest::Escalate(const std::string& why) {
  const std::string from = Tier().config->name;
  core_->metrics->Escalations(from)->Inc();
  ++escalations_;
  ++tier_pos_;
  on_candidate_ = false;
  EnterTier();
  log::Debug("gateway: request {}: escalating from {} to {} ({})", request_id_, from,
             Tier().config->name, why);
  tried_.clear();
  tier_attempts_ = 0;
  min_retry_after_s_ = -1;
  TryNext();
}

void ProxiedRequest::ChargeAttempt(const AnswerFacts& facts) {
  TokenCounts t = facts.tokens;
  if (!facts.usage_seen) t.output = facts.content_chunks;  // an estimate: a token per chunk
  const Prices& prices = Tier().config->prices;
  tokens_ += t;
  cost_usd_ += CostUsd(prices, t);
}

CostAnnotation ProxiedRequest::Annotation() const {
  return CostAnnotation{cost_usd_, Tier().config->name, escalations_};
}

void ProxiedRequest::SendError(int status, std::string_view type, std::string_view message,
                               std::string_view code, http::Headers extra) {
  const http::OpenAiError e =
      http::MakeOpenAiError(status, std::string(type), std::string(message), std::string(code));
  extra.push_back({"Content-Type", "application/json"});
  extra.push_back({"X-Request-Id", request_id_});
  auto res = res_;
  if (client_started_) {  // mid-stream: an error event, then the end
    http::OpenAiError event = e;
    event.code.clear();  // as OpenAI's stream errors: no code
    std::string ev = http::OpenAiErrorEvent(event);
    Finish(status, "error", [res, ev = std::move(ev)]() mutable {
      res->Write(std::move(ev));
      res->End();
    });
    return;
  }
  Finish(status, status == 429 ? "rejected" : "error",
         [res, status, extra = std::move(extra), body = http::OpenAiErrorBody(e)] {
           res->Send(status, extra, body);
         });
}

void ProxiedRequest::OnClientGone() {
  std::lock_guard lock(mu_);
  if (finished_ || client_gone_) return;
  client_gone_ = true;
  if (call_) call_->Cancel();
  if (rewriter_) ChargeAttempt(rewriter_->facts());
  Finish(499, "cancelled", [] {});
}

}  // namespace brisk::gateway
