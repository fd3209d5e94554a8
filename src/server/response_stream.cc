#include "server/response_stream.h"

#include <algorithm>
#include <utility>

#include "server/openai_logprobs.h"
#include "server/openai_tools.h"
#include "server/request_preparation.h"

namespace brisk {
namespace {

std::string_view FinishName(FinishReason r) {
  return r == FinishReason::kLength ? "length" : "stop";
}

}  // namespace

api::ApiError QueueFullError(const Status& st, double retry_s, http::Headers* extra) {
  extra->emplace_back("Retry-After", fmt::format("{}", static_cast<int>(retry_s)));
  return http::MakeOpenAiError(
      429, "rate_limit_error",
      fmt::format("Server busy: {}. Retry after {} s.", st.message(), retry_s), "queue_full");
}

FailureAnswer SubmitFailure(const Status& st, const EngineClient& engine, Priority priority) {
  FailureAnswer f;
  if (st.code() == StatusCode::kResourceExhausted) {
    f.error = QueueFullError(st, engine.RetryAfterSeconds(priority), &f.extra);
    f.outcome = "rejected";
  } else if (st.code() == StatusCode::kUnavailable) {
    f.error = http::MakeOpenAiError(503, "server_error", st.message(), "draining");
    f.outcome = "error";
  } else {
    f.error = http::MakeOpenAiError(400, "invalid_request_error", st.message(), "invalid_value");
    f.outcome = "invalid";
  }
  return f;
}

ResponseSummary FailureAnswer::Summary(bool client_closed, bool started) const {
  ResponseSummary s;
  s.outcome = outcome;
  s.http_status = client_closed ? 499 : started ? 200 : error.http_status;
  return s;
}

FailureAnswer GenerationFailure(const SequenceOutput& out, const Status& error, bool client_closed,
                                const EngineClient& engine, Priority priority) {
  FailureAnswer f;
  f.error = http::MakeOpenAiError(
      500, "server_error", error.ok() ? "generation failed" : error.message(), "internal_error");
  if (error.code() == StatusCode::kResourceExhausted) {
    f.outcome = "rejected";
    f.error = QueueFullError(error, engine.RetryAfterSeconds(priority), &f.extra);
  } else if (out.reason == FinishReason::kCancelled) {
    f.outcome = client_closed ? "cancelled" : "error";
    f.error = http::MakeOpenAiError(
        503, "server_error", "The request was cancelled (server shutting down)", "cancelled");
  } else if (out.reason == FinishReason::kDeadline) {
    f.outcome = "timeout";
    f.error = http::MakeOpenAiError(
        504, "timeout", "The request's deadline passed before it finished", "deadline_exceeded");
  }
  return f;
}

ResponseStream::ResponseStream(Options options, std::shared_ptr<http::Responder> res,
                               ServerMetrics& metrics, EngineClient& engine, DoneCallback on_done)
    : opts_(std::move(options)),
      res_(std::move(res)),
      metrics_(metrics),
      engine_(engine),
      on_done_(std::move(on_done)) {
  const int n_choices = opts_.num_prompts * opts_.n;
  remaining_ = n_choices;
  choices_.resize(n_choices);
  for (int i = 0; i < n_choices; ++i) choices_[i].index = i;
  role_sent_.assign(n_choices, 0);
  echo_sent_.assign(n_choices, 0);
  lp_pending_.resize(n_choices);
  lp_prompt_.resize(n_choices);
  text_offset_.assign(n_choices, 0);
  if (opts_.tool_calls && opts_.stream) tool_parsers_.assign(n_choices, api::ToolCallParser());
  in_call_.assign(n_choices, 0);
  call_text_.resize(n_choices);
  if (opts_.reasoning.enabled() && opts_.endpoint == api::Endpoint::kChatCompletions) {
    reasoning_.assign(n_choices, ReasoningTap(opts_.reasoning, opts_.reasoning_start,
                                              opts_.constraint_after_reasoning));
  } else {
    reasoning_.resize(n_choices);
  }
  last_token_at_.assign(n_choices, {});
}

void ResponseStream::CancelEngineRequests() {
  if (cancel_sent_) return;
  cancel_sent_ = true;
  for (int64_t id : engine_ids_) engine_.Cancel(id);
}

void ResponseStream::End(ResponseSummary summary) {
  done_ = true;
  // With stages, total is their sum (arrival -> written), as in Server-Timing.
  summary.total_s = summary.stages.empty() ? SecondsOf(Clock::now() - opts_.arrival)
                                           : StagesTotalMs(summary.stages) / 1e3;
  summary.queue_s = queue_s_;
  if (t_first_) summary.ttft_s = SecondsOf(*t_first_ - opts_.arrival);
  summary.usage = usage_;
  if (!choices_.empty()) summary.finish_reason = choices_[0].finish_reason;
  summary.trace_id = opts_.trace_id;
  metrics_.outcome[summary.outcome]->Inc();
  if (on_done_) on_done_(summary);
}

void ResponseStream::OnClientGone() {
  if (done_) return;
  CancelEngineRequests();
  // The engine's kCancelled outputs finish the bookkeeping.
}

void ResponseStream::FailSubmit(const Status& st) {
  if (done_) return;
  CancelEngineRequests();
  FailureAnswer f = SubmitFailure(st, engine_, opts_.priority);
  End(f.Summary(false, false));
  http::SendOpenAiError(*res_, f.error, std::move(f.extra));
}

// Abnormal ends finish the whole request at once.
void ResponseStream::Fail(const SequenceOutput& out, const Status& error) {
  CancelEngineRequests();
  const bool closed = res_->closed();
  FailureAnswer f = GenerationFailure(out, error, closed, engine_, opts_.priority);
  api::ApiError& e = f.error;
  http::Headers& extra = f.extra;
  End(f.Summary(closed, started_));  // counted before the answer leaves
  if (closed) return;
  if (started_) {
    res_->Write(http::OpenAiErrorEvent(e));
    res_->Write(std::string(api::kSseDone));
    res_->End();
  } else {
    http::SendOpenAiError(*res_, e, std::move(extra));
  }
}

void ResponseStream::StartStream() {
  if (started_) return;
  http::Headers h = {{"Content-Type", "text/event-stream"}, {"X-Request-Id", opts_.id}};
  h.insert(h.end(), opts_.extra_headers.begin(), opts_.extra_headers.end());
  // Only tokenize is known before the first byte; the whole budget follows
  // in the trailer.
  const TimedStage tokenize{"tokenize", MsBetween(opts_.arrival, opts_.prepared)};
  h.emplace_back("Server-Timing", FormatServerTiming({&tokenize, 1}));
  h.emplace_back("Trailer", "Server-Timing");
  res_->StartStream(200, std::move(h));
  started_ = true;
}

const api::Usage* ResponseStream::UsageSoFar() {
  if (!opts_.continuous_usage) return nullptr;
  usage_so_far_.prompt_tokens = opts_.prompt_tokens;
  usage_so_far_.cached_tokens = usage_.cached_tokens;  // known as samples finish
  return &usage_so_far_;
}

// As OpenAI streams a chat choice: {"role": "assistant", "content": ""}
// first, then content deltas, then an empty delta with the finish_reason.
void ResponseStream::StreamOutput(int index, int prompt_index, const SequenceOutput& out,
                                  const std::string& reasoning) {
  const auto& o = opts_;
  StartStream();
  const api::Usage* usage = UsageSoFar();
  // "auto": the role chunk waits for the first text, so that a call from the
  // start says content null too.
  const bool call_now = in_call_[index] || out.constrained_from == 0;
  const bool wait =
      o.tool_calls_auto && out.text.empty() && reasoning.empty() && !out.finished && !call_now;
  if (!role_sent_[index] && o.endpoint == api::Endpoint::kChatCompletions && !wait) {
    role_sent_[index] = 1;
    // The role chunk comes before this output's tokens (as vLLM counts it).
    // A forced tool call has no text: its first delta says content null, as
    // OpenAI's does (clients such as llama.cpp's tests refuse "" there).
    const bool null_content = o.tool_calls && (!o.tool_calls_auto || call_now);
    res_->Write(null_content ? api::SseDeltaChunk(o.id, o.model_id, o.created_unix, index,
                                                  {{"role", "assistant"}, {"content", nullptr}},
                                                  std::nullopt, usage)
                             : api::SseChunk(o.endpoint, o.id, o.model_id, o.created_unix, index,
                                             "assistant", "", std::nullopt, usage));
  }
  usage_so_far_.completion_tokens += static_cast<int64_t>(out.new_tokens.size());
  if (!reasoning.empty()) {
    res_->Write(api::SseDeltaChunk(o.id, o.model_id, o.created_unix, index,
                                   {{"reasoning_content", reasoning}}, std::nullopt, usage));
  }
  if (o.tool_calls_auto) return StreamAuto(index, prompt_index, out, usage);
  if (o.tool_calls) return StreamToolCalls(index, out, usage);
  StreamText(index, prompt_index, out, usage);
}

void ResponseStream::StreamAuto(int index, int prompt_index, const SequenceOutput& out,
                                const api::Usage* usage) {
  if (in_call_[index]) return StreamToolCalls(index, out, usage);
  if (out.constrained_from < 0) return StreamText(index, prompt_index, out, usage);
  // The trigger fired in this output: the text before it (with every token
  // record) is content, the rest is the call's first bytes.
  in_call_[index] = 1;
  const auto from = static_cast<size_t>(out.constrained_from);
  SequenceOutput content = out;
  content.text.resize(from);
  content.finished = false;
  StreamText(index, prompt_index, content, usage);
  SequenceOutput call = out;
  call.text.erase(0, from);
  call.logprobs.clear();
  StreamToolCalls(index, call, usage);
}

void ResponseStream::StreamText(int index, int prompt_index, const SequenceOutput& out,
                                const api::Usage* usage) {
  const auto& o = opts_;
  // Each chunk carries the records of the tokens whose text it sends; the
  // records of held-back text wait for the chunk that sends it (at the
  // latest the final one).
  const std::string text = TakeEcho(index, prompt_index) + out.text;
  const bool lp = o.logprobs >= 0;
  auto& pending = lp_pending_[index];
  if (lp) pending.insert(pending.end(), out.logprobs.begin(), out.logprobs.end());
  const auto write = [&](std::string_view t, std::optional<std::string_view> finish) {
    nlohmann::ordered_json j;
    if (lp) {
      j = LogprobsJson(index, lp_prompt_[index], pending);
      lp_prompt_[index].clear();
      pending.clear();
    }
    res_->Write(api::SseChunk(o.endpoint, o.id, o.model_id, o.created_unix, index, std::nullopt, t,
                              finish, usage, lp ? &j : nullptr));
  };
  if (!text.empty()) write(text, std::nullopt);
  if (out.finished) write("", FinishName(out.reason));
}

void ResponseStream::StreamToolCalls(int index, const SequenceOutput& out,
                                     const api::Usage* usage) {
  const auto& o = opts_;
  api::ToolCallParser& p = tool_parsers_[static_cast<size_t>(index)];
  std::vector<api::ToolCallDelta> deltas;
  p.Feed(out.text, &deltas);
  for (const api::ToolCallDelta& d : deltas) {
    nlohmann::ordered_json call = {{"index", d.index}};
    if (!d.name.empty()) {
      call["id"] = api::NewToolCallId();
      call["type"] = "function";
      call["function"] = {{"name", d.name}, {"arguments", ""}};
    } else {
      call["function"] = {{"arguments", d.arguments}};
    }
    res_->Write(api::SseDeltaChunk(o.id, o.model_id, o.created_unix, index,
                                   {{"tool_calls", nlohmann::ordered_json::array({call})}},
                                   std::nullopt, usage));
  }
  auto& pending = lp_pending_[static_cast<size_t>(index)];
  if (o.logprobs >= 0) pending.insert(pending.end(), out.logprobs.begin(), out.logprobs.end());
  if (!out.finished) return;
  nlohmann::ordered_json lp;
  if (o.logprobs >= 0) lp = LogprobsJson(index, {}, pending);
  const std::string_view finish = p.complete() ? "tool_calls" : FinishName(out.reason);
  res_->Write(api::SseDeltaChunk(o.id, o.model_id, o.created_unix, index,
                                 nlohmann::ordered_json::object(), finish, usage,
                                 o.logprobs >= 0 ? &lp : nullptr));
}

void ResponseStream::FinishToolCalls(api::Choice& ch, const std::string& call_text) {
  api::ToolCallParser p;
  std::vector<api::ToolCallDelta> deltas;
  p.Feed(call_text, &deltas);
  // Cut off (finish_reason stays "length"): the calls closed before the cut
  // are answered, each with complete arguments; the unfinished one is
  // dropped (its JSON is the grammar's wrapper, not a call to make).
  if (p.num_calls() == 0) return;
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
  for (const api::ToolCallDelta& d : deltas) {
    if (d.index >= p.num_calls()) break;
    if (!d.name.empty()) {
      calls.push_back({{"id", api::NewToolCallId()},
                       {"type", "function"},
                       {"function", {{"name", d.name}, {"arguments", ""}}}});
    } else if (!calls.empty()) {
      calls.back()["function"]["arguments"].get_ref<std::string&>() += d.arguments;
    }
  }
  ch.tool_calls = std::move(calls);
  if (p.complete()) ch.finish_reason = "tool_calls";
}

std::string ResponseStream::TakeEcho(int index, int prompt_index) {
  if (opts_.echo_prompts.empty() || echo_sent_[index]) return "";
  echo_sent_[index] = 1;
  return opts_.echo_prompts[static_cast<size_t>(prompt_index)];
}

nlohmann::ordered_json ResponseStream::LogprobsJson(int index, std::span<const TokenLogprob> prompt,
                                                    std::span<const TokenLogprob> generated) {
  const Tokenizer& tok = *opts_.tokenizer;
  if (opts_.endpoint == api::Endpoint::kChatCompletions)
    return api::ChatLogprobs(api::ChatLogprobContent(generated, tok, opts_.render_special));
  nlohmann::ordered_json j;
  int64_t* offset = &text_offset_[static_cast<size_t>(index)];
  // Token-id prompts are echoed as sent, special tokens included (as vLLM
  // does); a text prompt's added BOS stays unnamed, as in its echoed text.
  api::AppendCompletionLogprobs(prompt, tok, opts_.render_special || opts_.echo_token_prompts, true,
                                offset, &j);
  api::AppendCompletionLogprobs(generated, tok, opts_.render_special, false, offset, &j);
  return j;
}

void ResponseStream::OnOutput(int prompt_index, const SequenceOutput& out_in, const Status& error) {
  if (done_) return;
  const auto now = Clock::now();
  const int index = prompt_index * opts_.n + out_in.index;
  if (index < 0 || index >= static_cast<int>(choices_.size())) return;
  if (!error.ok() || out_in.reason == FinishReason::kError ||
      out_in.reason == FinishReason::kCancelled || out_in.reason == FinishReason::kDeadline)
    return Fail(out_in, error);

  if (!out_in.new_tokens.empty()) {
    if (!t_first_) {
      t_first_ = now;
      metrics_.ttft->Observe(SecondsOf(now - opts_.arrival));
    }
    if (last_token_at_[index] != Clock::time_point{})
      metrics_.itl->Observe(SecondsOf(now - last_token_at_[index]));
    last_token_at_[index] = now;
    t_last_ = now;
  }
  api::Choice& ch = choices_[index];
  if (!out_in.prompt_logprobs.empty()) lp_prompt_[index] = out_in.prompt_logprobs;
  // The reasoning out first: `out` is the answer's part of the output.
  std::string reasoning;
  SequenceOutput answer;
  if (reasoning_[index].on()) answer = reasoning_[index].Take(out_in, &reasoning);
  const SequenceOutput& out = reasoning_[index].on() ? answer : out_in;
  if (!opts_.stream) ch.reasoning += reasoning;
  if (opts_.stream) {
    StreamOutput(index, prompt_index, out, reasoning);
  } else if (opts_.tool_calls_auto && (in_call_[index] || out.constrained_from >= 0)) {
    const size_t from = in_call_[index] ? 0 : static_cast<size_t>(out.constrained_from);
    in_call_[index] = 1;
    ch.text.append(out.text, 0, from);
    call_text_[index].append(out.text, from);
    auto& lp = lp_pending_[index];
    lp.insert(lp.end(), out.logprobs.begin(), out.logprobs.end());
  } else {
    ch.text += TakeEcho(index, prompt_index) + out.text;
    auto& lp = lp_pending_[index];
    lp.insert(lp.end(), out.logprobs.begin(), out.logprobs.end());
  }
  if (!out.finished) return;
  if (!opts_.stream && opts_.logprobs >= 0)
    ch.logprobs = LogprobsJson(index, lp_prompt_[index], lp_pending_[index]);

  ch.finish_reason = std::string(FinishName(out.reason));
  if (opts_.tool_calls) {
    if (!opts_.stream && opts_.tool_calls_auto)
      FinishToolCalls(ch, call_text_[index]);  // content stays what came before the call
    else if (!opts_.stream)
      FinishToolCalls(ch, std::exchange(ch.text, std::string()));
    else if (tool_parsers_[static_cast<size_t>(index)].complete())
      ch.finish_reason = "tool_calls";
  }
  usage_.completion_tokens += out.completion_tokens;
  usage_.accepted_draft_tokens += out.accepted_draft_tokens;
  if (out.index == 0) {
    usage_.prompt_tokens += out.prompt_tokens;
    usage_.cached_tokens += out.cached_tokens;
    if (prompt_index == 0) queue_s_ = out.queue_s;
  }
  if (--remaining_ == 0) Complete();
}

void ResponseStream::Complete() {
  const auto now = Clock::now();
  const double e2e = SecondsOf(now - opts_.arrival);
  ServerMetrics& m = metrics_;
  m.e2e->Observe(e2e);
  m.prompt_tokens->Inc(double(usage_.prompt_tokens));
  m.cached_tokens->Inc(double(usage_.cached_tokens));
  m.generation_tokens->Inc(double(usage_.completion_tokens));
  if (queue_s_ >= 0) m.queue->Observe(queue_s_);
  if (t_first_) {
    const double ttft = SecondsOf(*t_first_ - opts_.arrival);
    if (queue_s_ >= 0) m.prefill->Observe(std::max(0.0, ttft - queue_s_));
    m.decode->Observe(SecondsOf(t_last_ - *t_first_));
    const int64_t per_choice = usage_.completion_tokens / std::max<int64_t>(1, choices_.size());
    if (per_choice > 1) m.tpot->Observe((e2e - ttft) / double(per_choice - 1));
  }
  ResponseSummary s;
  s.outcome = "ok";
  s.http_status = res_->closed() ? 499 : 200;
  const auto& o = opts_;
  if (res_->closed()) return End(std::move(s));
  // The answer's last bytes are made before `written` is read, so the write
  // stage covers them; they leave right after End() (counted first: a client
  // that reads /metrics right after its answer sees its request).
  if (o.stream) {
    StartStream();
    std::string tail;
    if (o.include_usage)
      tail = api::SseUsageChunk(o.endpoint, o.id, o.model_id, o.created_unix, usage_);
    tail += api::kSseDone;
    s.stages = Stages(now, Clock::now());
    const std::string timing = FormatServerTiming(s.stages, StagesTotalMs(s.stages));
    End(std::move(s));  // before [DONE] is queued: a client may stop reading at it
    res_->Write(std::move(tail));
    res_->End({{"Server-Timing", timing}});
  } else {
    std::string body =
        api::CompletionBody(o.endpoint, o.id, o.model_id, o.created_unix, choices_, usage_);
    http::Headers h = {{"Content-Type", "application/json"}, {"X-Request-Id", o.id}};
    h.insert(h.end(), o.extra_headers.begin(), o.extra_headers.end());
    s.stages = Stages(now, Clock::now());
    h.emplace_back("Server-Timing", FormatServerTiming(s.stages, StagesTotalMs(s.stages)));
    End(std::move(s));
    res_->Send(200, std::move(h), std::move(body));
  }
}

// Contiguous boundaries: arrival -> prepared -> first scheduled (the
// engine's queue time after arrival) -> first token -> last token (done) ->
// written. So the stages add up to written - arrival.
std::vector<TimedStage> ResponseStream::Stages(Clock::time_point done,
                                               Clock::time_point written) const {
  static constexpr std::string_view kNames[] = {"tokenize", "queue", "prefill", "decode", "write"};
  const auto& o = opts_;
  const Clock::time_point scheduled = queue_s_ >= 0
                                          ? o.arrival + std::chrono::duration_cast<Clock::duration>(
                                                            std::chrono::duration<double>(queue_s_))
                                          : o.prepared;
  const Clock::time_point first = t_first_ ? *t_first_ : done;
  const Clock::time_point b[] = {o.arrival, o.prepared, scheduled, first, done, written};
  return StagesFromBoundaries(kNames, b);
}

}  // namespace brisk
