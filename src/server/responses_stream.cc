#include "server/responses_stream.h"

#include <algorithm>

#include "server/openai_tools.h"
#include "server/request_preparation.h"

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;

}  // namespace

ResponsesStream::ResponsesStream(Options options, std::shared_ptr<http::Responder> res,
                                 ServerMetrics& metrics, EngineClient& engine, DoneCallback on_done)
    : opts_(std::move(options)),
      res_(std::move(res)),
      metrics_(metrics),
      engine_(engine),
      on_done_(std::move(on_done)),
      msg_id_(api::NewMessageItemId()),
      rs_id_(api::NewReasoningItemId()) {
  if (opts_.reasoning.enabled()) {
    tap_ = ReasoningTap(opts_.reasoning, opts_.reasoning_start, opts_.constraint_after_reasoning);
  }
}

void ResponsesStream::Cancel() {
  if (cancel_sent_ || engine_id_ < 0) return;
  cancel_sent_ = true;
  engine_.Cancel(engine_id_);
}

void ResponsesStream::End(ResponseSummary summary) {
  done_ = true;
  summary.total_s = SecondsOf(Clock::now() - opts_.arrival);
  summary.queue_s = queue_s_;
  if (t_first_) summary.ttft_s = SecondsOf(*t_first_ - opts_.arrival);
  summary.usage = usage_;
  metrics_.outcome[summary.outcome]->Inc();
  if (on_done_) on_done_(summary);
}

void ResponsesStream::Write(std::string_view type, Json fields) {
  res_->Write(api::ResponsesEvent(type, std::move(fields), &seq_));
}

void ResponsesStream::Begin() {
  if (!opts_.request->stream || started_ || done_) return;
  http::Headers h = {{"Content-Type", "text/event-stream"}, {"X-Request-Id", opts_.id}};
  h.insert(h.end(), opts_.extra_headers.begin(), opts_.extra_headers.end());
  res_->StartStream(200, std::move(h));
  started_ = true;
  const Json shell = api::ResponseObject(*opts_.request, opts_.id, opts_.created_at, opts_.model_id,
                                         "in_progress", Json::array(), nullptr);
  Write("response.created", {{"response", shell}});
  Write("response.in_progress", {{"response", shell}});
}

void ResponsesStream::OnClientGone() {
  if (!done_) Cancel();  // the engine's kCancelled output ends the bookkeeping
}

void ResponsesStream::FailSubmit(const Status& st) {
  if (done_) return;
  Cancel();
  FailureAnswer f = SubmitFailure(st, engine_, opts_.priority);
  End(f.Summary(false, false));
  http::SendOpenAiError(*res_, f.error, std::move(f.extra));
}

void ResponsesStream::Fail(const SequenceOutput& out, const Status& error) {
  Cancel();
  const bool closed = res_->closed();
  FailureAnswer f = GenerationFailure(out, error, closed, engine_, opts_.priority);
  api::ApiError& e = f.error;
  http::Headers& extra = f.extra;
  End(f.Summary(closed, started_));
  if (closed) return;
  if (!started_) return http::SendOpenAiError(*res_, e, std::move(extra));
  // OpenAI's stream error event, then the failed response.
  Write("error", {{"code", e.code}, {"message", e.message}, {"param", nullptr}});
  Json failed = api::ResponseObject(*opts_.request, opts_.id, opts_.created_at, opts_.model_id,
                                    "failed", Json::array(), nullptr);
  failed["error"] = {{"code", e.code}, {"message", e.message}};
  Write("response.failed", {{"response", std::move(failed)}});
  res_->End();
}

void ResponsesStream::StreamReasoning(const std::string& text) {
  if (text.empty()) return;
  if (!rs_open_) {
    rs_open_ = true;
    Write("response.output_item.added",
          {{"output_index", 0}, {"item", api::ReasoningItem(rs_id_, "in_progress", "")}});
  }
  Write("response.reasoning_text.delta",
        {{"item_id", rs_id_}, {"output_index", 0}, {"content_index", 0}, {"delta", text}});
}

void ResponsesStream::CloseReasoning() {
  if (!rs_open_ || rs_closed_) return;
  rs_closed_ = true;
  Write("response.reasoning_text.done",
        {{"item_id", rs_id_}, {"output_index", 0}, {"content_index", 0}, {"text", reasoning_}});
  Write("response.output_item.done",
        {{"output_index", 0}, {"item", api::ReasoningItem(rs_id_, "completed", reasoning_)}});
}

void ResponsesStream::StreamText(const std::string& text) {
  if (!msg_open_) {
    CloseReasoning();
    msg_open_ = true;
    Write("response.output_item.added",
          {{"output_index", MessageIndex()},
           {"item", api::MessageItem(msg_id_, "in_progress", "", false)}});
    Write("response.content_part.added", {{"item_id", msg_id_},
                                          {"output_index", MessageIndex()},
                                          {"content_index", 0},
                                          {"part", api::OutputTextPart("")}});
  }
  if (text.empty()) return;
  Write("response.output_text.delta", {{"item_id", msg_id_},
                                       {"output_index", MessageIndex()},
                                       {"content_index", 0},
                                       {"delta", text},
                                       {"logprobs", Json::array()}});
}

void ResponsesStream::StreamCalls(const std::string& text) {
  std::vector<api::ToolCallDelta> deltas;
  parser_.Feed(text, &deltas);
  for (const api::ToolCallDelta& d : deltas) {
    if (!d.name.empty()) {
      if (opts_.request->stream) {
        CloseReasoning();
        CloseCalls(calls_.size(), "completed");
      }
      calls_.push_back({api::NewFunctionCallItemId(), api::NewToolCallId(), d.name, std::string()});
      if (opts_.request->stream)
        Write("response.output_item.added",
              {{"output_index", CallBase() + calls_.size() - 1},
               {"item", api::FunctionCallItem(calls_.back().item_id, calls_.back().call_id, d.name,
                                              "", "in_progress")}});
    } else if (!calls_.empty() && !d.arguments.empty()) {
      calls_.back().arguments += d.arguments;
      if (opts_.request->stream)
        Write("response.function_call_arguments.delta",
              {{"item_id", calls_.back().item_id},
               {"output_index", CallBase() + calls_.size() - 1},
               {"delta", d.arguments}});
    }
  }
}

size_t ResponsesStream::CallBase() const {
  return MessageIndex() + (opts_.tool_calls_auto && (msg_open_ || !text_.empty()) ? 1 : 0);
}

void ResponsesStream::CloseMessage(std::string_view status) {
  if (msg_closed_) return;
  msg_closed_ = true;
  StreamText("");  // an empty answer still has its message item
  Write("response.output_text.done", {{"item_id", msg_id_},
                                      {"output_index", MessageIndex()},
                                      {"content_index", 0},
                                      {"text", text_},
                                      {"logprobs", Json::array()}});
  Write("response.content_part.done", {{"item_id", msg_id_},
                                       {"output_index", MessageIndex()},
                                       {"content_index", 0},
                                       {"part", api::OutputTextPart(text_)}});
  Write("response.output_item.done",
        {{"output_index", MessageIndex()}, {"item", api::MessageItem(msg_id_, status, text_)}});
}

bool ResponsesStream::ForcedCall() const { return opts_.tool_calls && !opts_.tool_calls_auto; }

void ResponsesStream::CloseItems(bool cut) {
  const std::string_view status = cut ? "incomplete" : "completed";
  CloseReasoning();
  if (calls_.empty()) {
    // A forced call cut off before its name: no item at all.
    if (ForcedCall()) return;
    return CloseMessage(status);
  }
  CloseCalls(std::min(calls_.size(), static_cast<size_t>(parser_.num_calls())), "completed");
  CloseCalls(calls_.size(), status);
}

void ResponsesStream::CloseCalls(size_t end, std::string_view status) {
  const size_t base = CallBase();
  for (; calls_closed_ < end; ++calls_closed_) {
    const size_t i = calls_closed_;
    const Call& c = calls_[i];
    Write("response.function_call_arguments.done", {{"item_id", c.item_id},
                                                    {"output_index", base + i},
                                                    {"name", c.name},
                                                    {"arguments", c.arguments}});
    Write("response.output_item.done",
          {{"output_index", base + i},
           {"item", api::FunctionCallItem(c.item_id, c.call_id, c.name, c.arguments, status)}});
  }
}

Json ResponsesStream::FinalOutput(bool cut) {
  const std::string_view status = cut ? "incomplete" : "completed";
  Json out = Json::array();
  if (!reasoning_.empty()) out.push_back(api::ReasoningItem(rs_id_, "completed", reasoning_));
  if (calls_.empty()) {
    // Under a forced call text_ is the call's own text, cut before its name.
    if (!ForcedCall()) out.push_back(api::MessageItem(msg_id_, status, text_));
  } else {
    // Auto: the text before the call, complete once the call began.
    if (CallBase() > MessageIndex()) out.push_back(api::MessageItem(msg_id_, "completed", text_));
    // A call is complete once it closed; only the last can be cut.
    const auto closed = static_cast<size_t>(parser_.num_calls());
    for (size_t i = 0; i < calls_.size(); ++i) {
      const Call& c = calls_[i];
      out.push_back(api::FunctionCallItem(c.item_id, c.call_id, c.name, c.arguments,
                                          i < closed ? "completed" : status));
    }
  }
  return out;
}

void ResponsesStream::OnOutput(const SequenceOutput& out_in, const Status& error) {
  if (done_ || out_in.index != 0) return;
  const auto now = Clock::now();
  if (!error.ok() || out_in.reason == FinishReason::kError ||
      out_in.reason == FinishReason::kCancelled || out_in.reason == FinishReason::kDeadline)
    return Fail(out_in, error);
  // The reasoning out first: `out` is the answer's part of the output.
  std::string reasoning;
  SequenceOutput answer;
  if (tap_.on()) answer = tap_.Take(out_in, &reasoning);
  const SequenceOutput& out = tap_.on() ? answer : out_in;
  reasoning_ += reasoning;
  if (opts_.request->stream && !res_->closed()) StreamReasoning(reasoning);
  if (!out.new_tokens.empty()) {
    if (!t_first_) {
      t_first_ = now;
      metrics_.ttft->Observe(SecondsOf(now - opts_.arrival));
    } else {
      metrics_.itl->Observe(SecondsOf(now - t_prev_token_));
    }
    t_prev_token_ = t_last_ = now;
  }
  const bool stream = opts_.request->stream && !res_->closed();
  if (opts_.tool_calls_auto) {
    // Text until the call starts (constrained_from), the call from there.
    const size_t from = in_call_                    ? 0
                        : out.constrained_from >= 0 ? static_cast<size_t>(out.constrained_from)
                                                    : out.text.size();
    const std::string before = out.text.substr(0, from);
    text_ += before;
    if (stream && !before.empty()) StreamText(before);
    if (in_call_ || out.constrained_from >= 0) {
      if (!in_call_ && stream && msg_open_) CloseMessage("completed");
      in_call_ = true;
      StreamCalls(out.text.substr(from));
    }
  } else {
    text_ += out.text;
    if (opts_.tool_calls) {
      StreamCalls(out.text);
    } else if (stream) {
      StreamText(out.text);
    }
  }
  if (!out.finished) return;
  // Cut off inside a call: the calls closed before it are the answer (the
  // cut one is dropped; a stream, which announced it, closes it
  // "incomplete"). A cut call's text is never message text.
  if (opts_.tool_calls && !calls_.empty() && !parser_.complete() && !opts_.request->stream) {
    calls_.resize(static_cast<size_t>(parser_.num_calls()));
  }
  usage_.completion_tokens = out.completion_tokens;
  usage_.prompt_tokens = out.prompt_tokens;
  usage_.cached_tokens = out.cached_tokens;
  queue_s_ = out.queue_s;
  Complete(out.reason == FinishReason::kLength);
}

void ResponsesStream::Complete(bool cut) {
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
    if (usage_.completion_tokens > 1)
      m.tpot->Observe((e2e - ttft) / double(usage_.completion_tokens - 1));
  }
  Json output = FinalOutput(cut);
  const std::string_view status = cut ? "incomplete" : "completed";
  Json response = api::ResponseObject(*opts_.request, opts_.id, opts_.created_at, opts_.model_id,
                                      status, output, &usage_);
  if (opts_.store && opts_.request->store) {
    Json conversation = opts_.history;
    for (const Json& msg : opts_.request->input_messages) conversation.push_back(msg);
    for (Json& msg : api::OutputToMessages(output)) conversation.push_back(std::move(msg));
    opts_.store->Put(opts_.tenant, opts_.id, response, std::move(conversation),
                     opts_.request->input_items);
  }
  ResponseSummary s;
  s.outcome = "ok";
  s.finish_reason = cut ? "length" : calls_.empty() ? "stop" : "tool_calls";
  s.http_status = res_->closed() ? 499 : 200;
  End(std::move(s));
  if (res_->closed()) return;
  if (opts_.request->stream) {
    CloseItems(cut);
    Write(cut ? "response.incomplete" : "response.completed", {{"response", std::move(response)}});
    res_->End();
  } else {
    http::Headers h = {{"Content-Type", "application/json"}, {"X-Request-Id", opts_.id}};
    h.insert(h.end(), opts_.extra_headers.begin(), opts_.extra_headers.end());
    res_->Send(200, std::move(h), response.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

}  // namespace brisk
