#include "loadgen/openai_stream.h"

namespace brisk::loadgen {

namespace {

using json = nlohmann::json;

// j[key] if j is an object holding a value of that key, else nullptr.
const json* Field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string StringField(const json& j, const char* key) {
  const json* f = Field(j, key);
  return f && f->is_string() ? f->get<std::string>() : std::string();
}

int64_t IntField(const json& j, const char* key) {
  const json* f = Field(j, key);
  return f && f->is_number() ? f->get<int64_t>() : -1;
}

std::string ErrorMessage(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  std::string msg = StringField(error, "message");
  return msg.empty() ? error.dump(-1, ' ', false, json::error_handler_t::replace) : msg;
}

}  // namespace

const char* ApiPath(ApiKind api) {
  return api == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string BuildRequestBody(const WorkloadItem& item, const RequestOptions& options) {
  json body;
  if (!options.model.empty()) body["model"] = options.model;
  if (options.api == ApiKind::kChat) {
    json messages = json::array();
    for (const ChatMessage& m : item.messages)
      messages.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(messages);
  } else {
    body["prompt"] = item.prompt;
  }
  body["max_tokens"] = item.max_tokens;
  body["temperature"] = options.temperature;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (options.ignore_eos) body["ignore_eos"] = true;
  if (options.extra_body.is_object())
    for (auto it = options.extra_body.begin(); it != options.extra_body.end(); ++it)
      body[it.key()] = it.value();
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void OpenAiStream::OnEvent(const http::SseEvent& event, Clock::time_point now) {
  if (finished()) return;
  if (event.event == "error") {
    json j = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
    std::string msg = j.is_discarded() ? event.data : ErrorMessage(j);
    error_ = "error event: " + (msg.empty() ? std::string("(empty)") : msg);
    return;
  }
  if (event.data == "[DONE]") {
    done_ = true;
    return;
  }
  json j = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    error_ = "stream event is not JSON: " + event.data.substr(0, 200);
    return;
  }
  OnJson(j, now);
}

void OpenAiStream::OnJson(const json& j, Clock::time_point now) {
  if (const json* err = Field(j, "error"); err && !err->is_null()) {
    error_ = "error event: " + ErrorMessage(*err);
    return;
  }
  if (const json* usage = Field(j, "usage"); usage && usage->is_object()) {
    if (int64_t p = IntField(*usage, "prompt_tokens"); p >= 0) usage_prompt_ = p;
    if (int64_t c = IntField(*usage, "completion_tokens"); c >= 0) usage_completion_ = c;
  }
  const json* choices = Field(j, "choices");
  if (!choices || !choices->is_array() || choices->empty()) return;
  const json& choice = (*choices)[0];
  last_choice_ = now;
  std::string text;
  if (api_ == ApiKind::kChat) {
    if (const json* delta = Field(choice, "delta")) {
      text = StringField(*delta, "content");
      if (text.empty()) text = StringField(*delta, "reasoning_content");
    }
  } else {
    text = StringField(choice, "text");
  }
  if (std::string reason = StringField(choice, "finish_reason"); !reason.empty())
    finish_reason_ = std::move(reason);
  if (text.empty()) return;
  if (content_chunks_ == 0) {
    first_content_ = now;
  } else {
    itl_s_.push_back(SecondsBetween(last_content_, now));
  }
  last_content_ = now;
  ++content_chunks_;
}

void OpenAiStream::Complete(int64_t prompt_tokens_estimate, RequestRecord* r) const {
  r->finish_reason = finish_reason_;
  r->content_chunks = content_chunks_;
  r->prompt_tokens_from_usage = usage_prompt_ >= 0;
  r->prompt_tokens = usage_prompt_ >= 0 ? usage_prompt_ : prompt_tokens_estimate;
  r->output_tokens_from_usage = usage_completion_ >= 0;
  r->output_tokens = usage_completion_ >= 0 ? usage_completion_ : content_chunks_;
  if (!error_.empty()) {
    r->status = RequestStatus::kError;
    r->error = error_;
    return;
  }
  if (content_chunks_ == 0) {
    r->status = RequestStatus::kError;
    r->error = "the stream ended without a content chunk";
    return;
  }
  r->status = RequestStatus::kOk;
  r->ttft_s = SecondsBetween(sent_, first_content_);
  r->e2e_s = SecondsBetween(sent_, std::max(last_choice_, last_content_));
  r->itl_s = itl_s_;
}

}  // namespace brisk::loadgen
