#include "http/sse.h"

namespace brisk::http {

void SseParser::Feed(std::string_view bytes, std::vector<SseEvent>* out) {
  for (char c : bytes) {
    if (pending_cr_) {
      pending_cr_ = false;
      if (c == '\n') continue;  // the LF of a CRLF split across pieces or not
    }
    if (c == '\r') {
      pending_cr_ = true;
      EndLine(out);
    } else if (c == '\n') {
      EndLine(out);
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::Finish(std::vector<SseEvent>* out) {
  if (!line_.empty()) EndLine(out);
  Dispatch(out);
  pending_cr_ = false;
}

void SseParser::EndLine(std::vector<SseEvent>* out) {
  std::string_view line = line_;
  if (line.empty()) {
    Dispatch(out);
    return;
  }
  if (line.front() != ':') {
    const size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data" || field == "error") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
      if (field == "error") event_ = "error";
    } else if (field == "event") {
      event_ = value;
    }
  }
  line_.clear();
}

void SseParser::Dispatch(std::vector<SseEvent>* out) {
  if (has_data_) out->push_back(SseEvent{std::move(event_), std::move(data_)});
  event_.clear();
  data_.clear();
  has_data_ = false;
}

}  // namespace brisk::http
