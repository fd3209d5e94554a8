#include "gateway/stream_rewriter.h"

#include <fmt/format.h>

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

bool StreamRewriter::Feed(std::string_view bytes, std::string* out) {
  events_.clear();
  parser_.Feed(bytes, &events_);
  for (const http::SseEvent& ev : events_) {
    if (done_) break;
    Event(ev, out);
  }
  return done_;
}

void StreamRewriter::Event(const http::SseEvent& ev, std::string* out) {
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
