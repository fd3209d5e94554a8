#include "gateway/stream_rewriter.h"

#include <fmt/format.h>

#include <algorithm>

#include "gateway/json_fields.h"

namespace brisk::gateway {

using Json = nlohmann::json;

namespace {

const Json* Find(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// `usage` is whatever the upstream sent under that key: anything that is not
// an object is replaced rather than indexed (a number there would throw).
void AddCost(Json* usage, const CostAnnotation& cost) {
  if (!usage->is_object()) *usage = Json::object();
  (*usage)["cost_usd"] = cost.cost_usd;
  (*usage)["tier"] = cost.tier;
  (*usage)["escalations"] = cost.escalations;
}

std::string Data(const Json& j) {
  return fmt::format("data: {}\n\n", j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace

void AnnotateAnswer(Json* body, const CostAnnotation& cost, bool keep_logprobs) {
  if (!body->is_object()) return;
  AddCost(&(*body)["usage"], cost);
  if (keep_logprobs) return;
  if (auto it = body->find("choices"); it != body->end() && it->is_array()) {
    for (Json& c : *it) {
      if (c.is_object() && c.contains("logprobs")) c["logprobs"] = nullptr;
    }
  }
}

void PatchResponse(Json* response, const ResponsePatch& patch, const CostAnnotation* cost) {
  if (!response->is_object()) return;
  (*response)["store"] = patch.store;
  (*response)["previous_response_id"] =
      patch.previous_response_id.empty() ? Json(nullptr) : Json(patch.previous_response_id);
  if (cost != nullptr) AddCost(&(*response)["usage"], *cost);
}

AnswerFacts ReadResponseObject(const Json& response) {
  AnswerFacts f;
  if (!response.is_object()) return f;
  if (const Json* usage = Find(response, "usage"); usage != nullptr && usage->is_object()) {
    f.usage_seen = true;
    f.tokens.prompt = IntOr(*usage, "input_tokens", 0);
    f.tokens.output = IntOr(*usage, "output_tokens", 0);
    if (const Json* d = Find(*usage, "input_tokens_details")) {
      f.tokens.cached = std::min(IntOr(*d, "cached_tokens", 0), f.tokens.prompt);
    }
  }
  const std::string status = StringOr(response, "status", "");
  if (status == "completed") {
    f.finish_reason = "stop";
  } else if (status == "incomplete") {
    const Json* d = Find(response, "incomplete_details");
    f.finish_reason =
        d != nullptr && StringOr(*d, "reason", "") == "max_output_tokens" ? "length" : "incomplete";
  } else if (!status.empty()) {
    f.finish_reason = status;
  }
  if (const Json* e = Find(response, "error")) f.error = *e;
  if (const Json* output = Find(response, "output"); output != nullptr && output->is_array()) {
    for (const Json& item : *output) {
      if (StringOr(item, "type", "") == "function_call") ++f.content_chunks;
      if (StringOr(item, "type", "") != "message") continue;
      const Json* content = Find(item, "content");
      if (content == nullptr || !content->is_array()) continue;
      for (const Json& part : *content) {
        if (StringOr(part, "type", "") == "output_text") f.text += StringOr(part, "text", "");
      }
    }
  }
  if (!f.text.empty()) ++f.content_chunks;
  return f;
}

bool StreamRewriter::Feed(std::string_view bytes, std::string* out) {
  events_.clear();
  parser_.Feed(bytes, &events_);
  for (const http::SseEvent& ev : events_) {
    if (done_) break;
    Event(ev, out);
  }
  return done_;
}

void StreamRewriter::ResponsesEvent(const http::SseEvent& ev, std::string* out) {
  Json j = Json::parse(ev.data, nullptr, false);
  const std::string event_line = ev.event.empty() ? "" : fmt::format("event: {}\n", ev.event);
  if (j.is_discarded() || !j.is_object()) {
    out->append(fmt::format("{}data: {}\n\n", event_line, ev.data));
    started_ = true;
    return;
  }
  const std::string type = StringOr(j, "type", ev.event);
  if (type == "response.output_text.delta" || type == "response.reasoning_text.delta" ||
      type == "response.function_call_arguments.delta") {
    ++facts_.content_chunks;
    if (type == "response.output_text.delta" && facts_.text.size() < (size_t{1} << 20)) {
      facts_.text += StringOr(j, "delta", "");
    }
  } else if (type == "error") {
    facts_.error = j;
  }
  if (auto r = j.find("response"); r != j.end() && r->is_object()) {
    PatchResponse(&*r, patch_, nullptr);
    if (type == "response.completed" || type == "response.incomplete" ||
        type == "response.failed") {
      const int64_t chunks = facts_.content_chunks;
      const std::string text = std::move(facts_.text);
      facts_ = ReadResponseObject(*r);
      facts_.content_chunks = std::max(chunks, facts_.content_chunks);
      if (facts_.text.empty()) facts_.text = text;
      final_event_ = std::move(j);
      final_event_name_ = ev.event.empty() ? type : ev.event;
      return;
    }
  }
  out->append(fmt::format("{}data: {}\n\n", event_line,
                          j.dump(-1, ' ', false, Json::error_handler_t::replace)));
  started_ = true;
}

void StreamRewriter::Event(const http::SseEvent& ev, std::string* out) {
  if (responses_) return ResponsesEvent(ev, out);
  if (ev.data == "[DONE]") {
    done_ = true;
    return;
  }
  Json j = Json::parse(ev.data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {  // not ours to judge: pass it on
    if (ev.event == "error") facts_.error = Json{{"message", ev.data}};
    out->append(ev.event.empty() || ev.event == "error" ? ""
                                                        : fmt::format("event: {}\n", ev.event));
    out->append(fmt::format("data: {}\n\n", ev.data));
    started_ = true;
    return;
  }
  ReadChunk(j, &facts_);
  const Json* choices = Find(j, "choices");
  const bool usage_only = Find(j, "usage") != nullptr && (choices == nullptr || choices->empty());
  if (usage_only) {  // the final usage chunk: held for Finish()
    final_usage_chunk_ = std::move(j);
    return;
  }
  bool changed = false;
  if (j.contains("usage") && !(wants_.include_usage && wants_.continuous_usage)) {
    j.erase("usage");
    changed = true;
  }
  if (!wants_.logprobs && choices != nullptr) {
    for (Json& c : j["choices"]) {
      if (c.is_object() && Find(c, "logprobs") != nullptr) {
        c["logprobs"] = nullptr;
        changed = true;
      }
    }
  }
  out->append(changed ? Data(j) : fmt::format("data: {}\n\n", ev.data));
  started_ = true;
}

std::string StreamRewriter::Finish(const CostAnnotation& cost) {
  std::vector<http::SseEvent> rest;
  parser_.Finish(&rest);
  std::string out;
  for (const http::SseEvent& ev : rest) {
    if (!done_) Event(ev, &out);
  }
  if (responses_) {
    if (final_event_) {
      PatchResponse(&(*final_event_)["response"], patch_, &cost);
      out += fmt::format("event: {}\ndata: {}\n\n", final_event_name_,
                         final_event_->dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    return out;
  }
  if (final_usage_chunk_ && wants_.include_usage) {
    AddCost(&(*final_usage_chunk_)["usage"], cost);
    out += Data(*final_usage_chunk_);
  }
  out += "data: [DONE]\n\n";
  return out;
}

std::string AnswerAsStream(const Json& body, bool chat, const ClientWants& wants,
                           const CostAnnotation& cost) {
  std::string out;
  Json base = {{"id", StringOr(body, "id", "")},
               {"object", chat ? "chat.completion.chunk" : "text_completion"},
               {"created", IntOr(body, "created", 0)},
               {"model", StringOr(body, "model", "")}};
  const Json* choices = Find(body, "choices");
  if (choices != nullptr && choices->is_array()) {
    for (const Json& c : *choices) {
      const int64_t index = IntOr(c, "index", 0);
      const Json logprobs = wants.logprobs && c.contains("logprobs") ? c["logprobs"] : Json();
      Json chunk = base;
      if (chat) {
        const Json* message = Find(c, "message");
        Json delta = {{"role", "assistant"}};
        if (message != nullptr) {
          if (const Json* content = Find(*message, "content")) delta["content"] = *content;
          if (const Json* calls = Find(*message, "tool_calls")) {
            Json indexed = *calls;
            for (size_t i = 0; i < indexed.size(); ++i) indexed[i]["index"] = i;
            delta["tool_calls"] = indexed;
          }
        }
        chunk["choices"] = Json::array({{{"index", index},
                                         {"delta", delta},
                                         {"logprobs", logprobs},
                                         {"finish_reason", nullptr}}});
      } else {
        chunk["choices"] = Json::array({{{"index", index},
                                         {"text", StringOr(c, "text", "")},
                                         {"logprobs", logprobs},
                                         {"finish_reason", nullptr}}});
      }
      out += Data(chunk);
      Json end = base;
      Json fin = {
          {"index", index}, {"logprobs", nullptr}, {"finish_reason", AnyOr(c, "finish_reason")}};
      if (chat) {
        fin["delta"] = Json::object();
      } else {
        fin["text"] = "";
      }
      end["choices"] = Json::array({fin});
      out += Data(end);
    }
  }
  if (wants.include_usage) {
    Json usage_chunk = base;
    usage_chunk["choices"] = Json::array();
    usage_chunk["usage"] = body.contains("usage") ? body["usage"] : Json::object();
    AddCost(&usage_chunk["usage"], cost);
    out += Data(usage_chunk);
  }
  out += "data: [DONE]\n\n";
  return out;
}

}  // namespace brisk::gateway
