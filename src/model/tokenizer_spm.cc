#include "model/tokenizer_spm.h"

#include <fmt/format.h>

#include <queue>

#include "util/utf8.h"

namespace brisk {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // ▁ U+2581

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0x4A>" -> 0x4A, or -1.
int ParseByteToken(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  const int hi = HexDigit(t[3]), lo = HexDigit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

SentencePieceBpe::SentencePieceBpe(const Vocab* vocab, int32_t unk_id)
    : vocab_(vocab), unk_id_(unk_id) {
  byte_ids_.fill(-1);
  for (int b = 0; b < 256; ++b) {
    if (auto id = vocab->Find(fmt::format("<0x{:02X}>", b))) byte_ids_[b] = *id;
  }
}

std::string SentencePieceBpe::EscapeSpaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out.append(kSpaceMark);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string SentencePieceBpe::DecodeToken(int32_t id) const {
  const std::string& t = vocab_->tokens[id];
  if (vocab_->types[id] == TokenType::kByte) {
    const int b = ParseByteToken(t);
    if (b >= 0) return std::string(1, static_cast<char>(b));
  }
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size();) {
    if (t.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out.push_back(' ');
      i += kSpaceMark.size();
    } else {
      out.push_back(t[i++]);
    }
  }
  return out;
}

void SentencePieceBpe::Encode(std::string_view text, std::vector<int32_t>* out) const {
  if (text.empty()) return;
  struct Sym {
    uint32_t begin, len;  // len == 0 once merged into the left neighbour
    int32_t prev, next;
  };
  std::vector<Sym> sym;
  sym.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    // One symbol per well-formed character; each byte of an ill-formed
    // sequence is a symbol of its own (it will become a byte token).
    size_t len = 1;
    if (CheckUtf8(text.substr(i), &len) != Utf8Check::kValid) len = 1;
    const auto idx = static_cast<int32_t>(sym.size());
    sym.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(len), idx - 1, idx + 1});
    i += len;
  }
  sym.back().next = -1;

  struct Cand {
    float score;
    int32_t left;
    uint32_t len;  // combined length when queued, to detect stale entries
    int32_t id;
    bool operator<(const Cand& o) const {
      return score != o.score ? score < o.score : left > o.left;  // max score, leftmost
    }
  };
  std::priority_queue<Cand> heap;
  auto push = [&](int32_t l) {
    if (l < 0 || sym[l].next < 0) return;
    const Sym& a = sym[l];
    const Sym& b = sym[a.next];
    auto id = vocab_->Find(text.substr(a.begin, a.len + b.len));
    if (!id) return;
    heap.push({vocab_->scores[*id], l, a.len + b.len, *id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) push(i);

  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = sym[c.left];
    // A symbol only grows or dies, so an unchanged combined length means
    // the same pair of symbols is still adjacent.
    if (l.len == 0 || l.next < 0 || l.len + sym[l.next].len != c.len) continue;
    Sym& r = sym[l.next];
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    push(l.prev);
    push(c.left);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    const std::string_view piece = text.substr(sym[i].begin, sym[i].len);
    if (auto id = vocab_->Find(piece)) {
      out->push_back(*id);
      continue;
    }
    // Only unmerged single characters get here (merges always form tokens).
    for (char ch : piece) {
      const int32_t b = byte_ids_[static_cast<uint8_t>(ch)];
      if (b >= 0) {
        out->push_back(b);
      } else if (unk_id_ >= 0) {
        out->push_back(unk_id_);
        break;  // one <unk> per character, as SentencePiece without byte fallback
      }
    }
  }
}

}  // namespace brisk
