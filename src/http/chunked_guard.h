// Limits on the framing of a chunked request body, checked as bytes arrive.
//
// Beast decodes chunked bodies but keeps an incomplete chunk-size line or trailer section in
// the caller's buffer until its CRLF arrives, with no bound: "1;x=" followed by a gigabyte
// without a line end would be buffered whole. ChunkedGuard sees every byte of the body once,
// in order, before the parser does, and says as soon as one framing element is too long.
// It does not validate syntax (the parser does); it only counts, so a malformed body is
// still bounded and then rejected by the parser.
//
// What counts toward what (RFC 9112 section 7.1):
//   chunk-size line, last-chunk included (size, extensions, CRLF) . max_line_bytes each; body
//   chunk data and the CRLF after it .............................. body
//   trailer fields and the final CRLF ............................. max_trailer_bytes, and
//                                                                   max_trailer_fields lines
// "body" is max_body_bytes: the body as sent, framing included, not only the decoded data. A
// chunk-size that would take the body past it is refused when its line ends, before its data.
// Lines end at CRLF, as for the parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace brisk::http::internal {

struct ChunkedLimits {
  size_t max_line_bytes = 4096;     // one chunk-size line, extensions and CRLF included
  size_t max_body_bytes = 4 << 20;  // chunk-size lines + data + CRLFs
  size_t max_trailer_bytes = 8192;  // trailer fields + the final CRLF
  size_t max_trailer_fields = 64;
};

class ChunkedGuard {
 public:
  enum class Verdict {
    kMore,                  // all bytes belong to the body; it is not complete yet
    kDone,                  // the body ended after `used` bytes (the rest is not ours)
    kLineTooLong,           // a chunk-size line exceeded max_line_bytes
    kBodyTooLarge,          // the body exceeded max_body_bytes (a chunk-size says so, too)
    kTrailerTooLarge,       // the trailer section exceeded max_trailer_bytes
    kTooManyTrailerFields,  // more than max_trailer_fields trailer lines
  };
  struct Result {
    Verdict verdict;
    size_t used;  // bytes of the input that belong to the body (all but for kDone)
  };

  explicit ChunkedGuard(ChunkedLimits limits) : limits_(limits) {}

  // Scans the next bytes of the body (right after the header section, then each call where the
  // last one stopped). After an error or kDone every further call returns the same verdict
  // with used = 0.
  Result Feed(std::string_view bytes);

  size_t body_bytes() const { return body_bytes_; }        // counted against max_body_bytes
  size_t trailer_bytes() const { return trailer_bytes_; }  // counted against max_trailer_bytes

 private:
  enum class State { kSizeLine, kData, kDataEnd, kTrailer, kStop };

  Result Stop(Verdict v, size_t used);

  const ChunkedLimits limits_;
  State state_ = State::kSizeLine;
  Verdict stop_verdict_ = Verdict::kMore;
  size_t line_bytes_ = 0;  // bytes of the current line so far
  bool prev_cr_ = false;   // the last byte was CR
  bool in_digits_ = true;  // still reading the chunk-size's hex digits
  bool any_digit_ = false;
  uint64_t chunk_size_ = 0;  // capped just past max_body_bytes
  uint64_t data_left_ = 0;   // chunk data bytes still to come
  int data_end_left_ = 0;    // bytes of the CRLF after chunk data still to come
  size_t trailer_fields_ = 0;
  size_t body_bytes_ = 0;
  size_t trailer_bytes_ = 0;
};

}  // namespace brisk::http::internal
