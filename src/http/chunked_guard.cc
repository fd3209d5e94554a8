#include "http/chunked_guard.h"

#include <algorithm>

namespace brisk::http::internal {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

ChunkedGuard::Result ChunkedGuard::Stop(Verdict v, size_t used) {
  state_ = State::kStop;
  stop_verdict_ = v;
  return {v, used};
}

ChunkedGuard::Result ChunkedGuard::Feed(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    switch (state_) {
      case State::kStop: return {stop_verdict_, 0};

      case State::kSizeLine: {
        const char c = bytes[i++];
        ++line_bytes_;
        ++body_bytes_;
        if (line_bytes_ > limits_.max_line_bytes) return Stop(Verdict::kLineTooLong, i);
        if (body_bytes_ > limits_.max_body_bytes) return Stop(Verdict::kBodyTooLarge, i);
        if (in_digits_) {
          if (int v = HexValue(c); v >= 0) {
            any_digit_ = true;
            // Saturates just past the limit: larger values are refused all the same.
            chunk_size_ = std::min<uint64_t>(chunk_size_ * 16 + static_cast<uint64_t>(v),
                                             uint64_t{limits_.max_body_bytes} + 1);
          } else {
            in_digits_ = false;
          }
        }
        const bool line_end = c == '\n' && prev_cr_;
        prev_cr_ = c == '\r';
        if (!line_end) break;
        const uint64_t size = any_digit_ ? chunk_size_ : 0;  // no digits: the parser refuses
        line_bytes_ = 0;
        in_digits_ = true;
        any_digit_ = false;
        chunk_size_ = 0;
        prev_cr_ = false;
        if (size == 0) {
          state_ = State::kTrailer;
        } else {
          if (size + 2 > limits_.max_body_bytes - body_bytes_) {
            return Stop(Verdict::kBodyTooLarge, i);
          }
          data_left_ = size;
          state_ = State::kData;
        }
        break;
      }

      case State::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(data_left_, bytes.size() - i));
        i += n;
        body_bytes_ += n;  // within the limit: checked when the size line ended
        data_left_ -= n;
        if (data_left_ == 0) {
          data_end_left_ = 2;
          state_ = State::kDataEnd;
        }
        break;
      }

      case State::kDataEnd:
        ++i;
        ++body_bytes_;
        if (--data_end_left_ == 0) state_ = State::kSizeLine;
        break;

      case State::kTrailer: {
        const char c = bytes[i++];
        ++line_bytes_;
        ++trailer_bytes_;
        if (trailer_bytes_ > limits_.max_trailer_bytes) {
          return Stop(Verdict::kTrailerTooLarge, i);
        }
        const bool line_end = c == '\n' && prev_cr_;
        prev_cr_ = c == '\r';
        if (!line_end) break;
        if (line_bytes_ == 2) return Stop(Verdict::kDone, i);  // the empty line ends the body
        line_bytes_ = 0;
        prev_cr_ = false;
        if (++trailer_fields_ > limits_.max_trailer_fields) {
          return Stop(Verdict::kTooManyTrailerFields, i);
        }
        break;
      }
    }
  }
  if (state_ == State::kStop) return {stop_verdict_, 0};
  return {Verdict::kMore, i};
}

}  // namespace brisk::http::internal
