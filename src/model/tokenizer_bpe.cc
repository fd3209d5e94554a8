#include "model/tokenizer_bpe.h"

#include <algorithm>
#include <array>
#include <queue>

#include "util/utf8.h"

namespace brisk {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes keep their code point,
// the other 68 bytes are numbered from U+0100 upward in byte order.
struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<std::string, 256> to_utf8;
  std::unordered_map<uint32_t, uint8_t> from_cp;
  ByteMap() {
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_cp[b] = printable ? b : 256 + n++;
      AppendUtf8(to_cp[b], &to_utf8[b]);
      from_cp[to_cp[b]] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& Bytes() {
  static const auto* m = new ByteMap();
  return *m;
}

}  // namespace

std::string ByteLevelBpe::EncodeBytes(std::string_view bytes) {
  const ByteMap& m = Bytes();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += m.to_utf8[static_cast<uint8_t>(c)];
  return out;
}

std::string ByteLevelBpe::DecodeTokenText(std::string_view text) {
  const ByteMap& m = Bytes();
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t len = 0;
    if (CheckUtf8(text.substr(i), &len) == Utf8Check::kValid) {
      auto it = m.from_cp.find(DecodeUtf8(text.substr(i), len));
      if (it != m.from_cp.end()) {
        out.push_back(static_cast<char>(it->second));
      } else {
        out.append(text.substr(i, len));
      }
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

Expected<ByteLevelBpe> ByteLevelBpe::Create(const Vocab* vocab, std::span<const std::string> merges,
                                            bool ignore_merges) {
  ByteLevelBpe bpe;
  bpe.vocab_ = vocab;
  bpe.ignore_merges_ = ignore_merges;
  const ByteMap& m = Bytes();
  for (int b = 0; b < 256; ++b) bpe.byte_ids_[b] = vocab->Find(m.to_utf8[b]).value_or(-1);

  bpe.merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& mg = merges[rank];
    // Split at the first space after position 0 (a left part may itself be
    // a space in non-byte-level vocabs).
    const size_t sp = mg.find(' ', 1);
    if (sp == std::string::npos) {
      return InvalidArgument("tokenizer merge {} '{}' is not 'left right'", rank, mg);
    }
    std::string_view left(mg.data(), sp), right(mg.data() + sp + 1, mg.size() - sp - 1);
    auto l = vocab->Find(left), r = vocab->Find(right);
    joined.assign(left);
    joined.append(right);
    auto res = vocab->Find(joined);
    // A merge naming tokens the vocab lacks can never fire; skip it as HF does.
    if (!l || !r || !res) continue;
    bpe.merges_.emplace(Key(*l, *r), Merge{static_cast<int32_t>(rank), *res});  // first wins
  }
  return bpe;
}

void ByteLevelBpe::EncodePiece(std::string_view piece, std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (auto id = vocab_->Find(EncodeBytes(piece))) {
      out->push_back(*id);
      return;
    }
  }
  const int32_t n = static_cast<int32_t>(piece.size());
  struct Sym {
    int32_t id;  // -1 once merged into its left neighbour
    int32_t prev, next;
  };
  std::vector<Sym> sym(n);
  for (int32_t i = 0; i < n; ++i) {
    sym[i] = {byte_ids_[static_cast<uint8_t>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  struct Cand {
    int32_t rank, left, left_id, right_id, result;
    // Min-heap on (rank, position): lowest rank first, leftmost on ties.
    bool operator<(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Cand> heap;
  auto push = [&](int32_t l) {
    if (l < 0) return;
    const int32_t r = sym[l].next;
    if (r < 0 || sym[l].id < 0 || sym[r].id < 0) return;
    auto it = merges_.find(Key(sym[l].id, sym[r].id));
    if (it != merges_.end())
      heap.push({it->second.rank, l, sym[l].id, sym[r].id, it->second.result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);

  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    // Stale entries: a symbol only ever grows (its id changes) or is absorbed
    // by its left neighbour, so matching ids mean the pair is still there.
    Sym& l = sym[c.left];
    if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;
    Sym& r = sym[l.next];
    l.id = c.result;
    r.id = -1;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    push(l.prev);
    push(c.left);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = sym[i].next) {
    if (sym[i].id >= 0) out->push_back(sym[i].id);
  }
}

}  // namespace brisk
