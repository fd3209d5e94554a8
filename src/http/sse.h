// Incremental parser for a server-sent-events stream (the text/event-stream
// format of the WHATWG HTML spec). Bytes arrive in arbitrary pieces; complete
// events come out. Lines end in LF, CRLF or CR; a blank line ends an event;
// "data:" lines are joined with '\n'; lines starting with ':' are comments.
// llama-server reports a failure mid-stream as an "error: {...}" line, so an
// "error" field is kept too (as an event of type "error").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisk::http {

struct SseEvent {
  std::string event;  // the "event:" field; "error" for an "error:" line; else empty
  std::string data;
};

class SseParser {
 public:
  // Appends every event completed by `bytes` to `out`.
  void Feed(std::string_view bytes, std::vector<SseEvent>* out);
  // End of stream: an event still open (no closing blank line) is emitted
  // rather than dropped, so a server that omits the last blank line still
  // counts its final event.
  void Finish(std::vector<SseEvent>* out);

 private:
  void EndLine(std::vector<SseEvent>* out);
  void Dispatch(std::vector<SseEvent>* out);

  std::string line_;
  std::string data_;
  std::string event_;
  bool has_data_ = false;
  bool pending_cr_ = false;  // last byte was CR: a following LF belongs to it
};

}  // namespace brisk::http
