#include "grammar/byte_dfa.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>

#include "grammar/string_lexer.h"

namespace brisk {
namespace {

Status TooLarge() {
  return Status(StatusCode::kResourceExhausted,
                fmt::format("the automaton would have more than {} states or {} transitions",
                            kMaxDfaStates, kMaxDfaTransitions));
}

bool OverLimits(size_t states, uint32_t num_classes) {
  return states > kMaxDfaStates || states * num_classes > kMaxDfaTransitions;
}

// Breadth-first product construction: states are discovered by a 64-bit
// key, `step(key, class)` gives the successor key (or kNoKey), and
// `accept(key)` marks accepting states. Classes are `dfa_classes` over
// `byte_class`.
constexpr uint64_t kNoKey = ~uint64_t{0};

template <class Step, class Accept>
Expected<ByteDfa> Explore(const std::array<uint8_t, 256>& byte_class, uint32_t num_classes,
                          uint64_t start_key, Step step, Accept accept) {
  ByteDfa out;
  out.byte_class = byte_class;
  out.num_classes = num_classes;
  std::unordered_map<uint64_t, uint32_t> ids;
  std::vector<uint64_t> keys;
  const auto id_of = [&](uint64_t key) {
    auto [it, fresh] = ids.emplace(key, static_cast<uint32_t>(keys.size()));
    if (fresh) keys.push_back(key);
    return it->second;
  };
  out.start = id_of(start_key);
  for (size_t s = 0; s < keys.size(); ++s) {
    if (OverLimits(keys.size(), num_classes)) return TooLarge();
    const uint64_t key = keys[s];
    out.accepting.push_back(accept(key) ? 1 : 0);
    for (uint32_t c = 0; c < num_classes; ++c) {
      const uint64_t to = step(key, c);
      out.next.push_back(to == kNoKey ? kDfaDead : id_of(to));
    }
  }
  return Trim(out);
}

// Per state: whether it lies between two characters (the next byte starts
// one). The string lexer's state is the same on every path to a state,
// since the DFA reads only well-formed contents.
std::vector<uint8_t> BetweenChars(const ByteDfa& dfa) {
  const size_t n = dfa.num_states();
  const uint32_t k = dfa.num_classes;
  std::vector<int8_t> seen(n, 0);
  std::vector<uint8_t> between(n, 0);
  std::vector<std::array<uint8_t, 3>> lex(n);
  std::array<uint8_t, 256> rep{};
  for (int x = 255; x >= 0; --x) rep[dfa.byte_class[x]] = static_cast<uint8_t>(x);
  if (n == 0) return between;
  std::vector<uint32_t> work = {dfa.start};
  seen[dfa.start] = 1, between[dfa.start] = 1;
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    for (uint32_t c = 0; c < k; ++c) {
      const uint32_t t = dfa.next[size_t{s} * k + c];
      if (t == kDfaDead || seen[t]) continue;
      std::array<uint8_t, 3> l = lex[s];
      string_lexer::Lex(l[0], l[1], l[2], rep[c], /*canonical=*/false);
      lex[t] = l;
      seen[t] = 1, between[t] = l[0] == string_lexer::kNormal ? 1 : 0;
      work.push_back(t);
    }
  }
  return between;
}

}  // namespace

bool ByteDfa::Accepts(std::string_view bytes) const {
  if (empty()) return false;
  uint32_t s = start;
  uint8_t lex = 0, aux = 0, range = 0;
  uint32_t chars = 0;
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (string_lexer::Lex(lex, aux, range, b, false) == string_lexer::Lexed::kCharStart) ++chars;
    s = Next(s, b);
    if (s == kDfaDead) return false;
    if (max_chars != 0xFFFFFFFFu && chars + chars_to_accept[s] > max_chars) return false;
  }
  return accepting[s] != 0;
}

ByteDfa Trim(const ByteDfa& dfa) {
  const size_t n = dfa.num_states();
  const uint32_t k = dfa.num_classes;
  ByteDfa out;
  out.byte_class = dfa.byte_class;
  out.num_classes = k;
  if (n == 0) return out;
  std::vector<uint8_t> reach(n, 0), live(n, 0);
  std::vector<uint32_t> work = {dfa.start};
  reach[dfa.start] = 1;
  std::vector<std::vector<uint32_t>> preds(n);
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    for (uint32_t c = 0; c < k; ++c) {
      const uint32_t t = dfa.next[size_t{s} * k + c];
      if (t == kDfaDead) continue;
      preds[t].push_back(s);
      if (!reach[t]) reach[t] = 1, work.push_back(t);
    }
  }
  for (uint32_t s = 0; s < n; ++s)
    if (reach[s] && dfa.accepting[s]) live[s] = 1, work.push_back(s);
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    for (uint32_t p : preds[s])
      if (!live[p]) live[p] = 1, work.push_back(p);
  }
  if (!live[dfa.start]) return out;
  std::vector<uint32_t> id(n, kDfaDead);
  uint32_t m = 0;
  for (uint32_t s = 0; s < n; ++s)
    if (live[s]) id[s] = m++;
  out.start = id[dfa.start];
  out.accepting.assign(m, 0);
  out.next.assign(size_t{m} * k, kDfaDead);
  for (uint32_t s = 0; s < n; ++s) {
    if (!live[s]) continue;
    out.accepting[id[s]] = dfa.accepting[s];
    for (uint32_t c = 0; c < k; ++c) {
      const uint32_t t = dfa.next[size_t{s} * k + c];
      out.next[size_t{id[s]} * k + c] = t == kDfaDead ? kDfaDead : id[t];
    }
  }
  return out;
}

Expected<ByteDfa> Determinize(const ByteNfa& nfa) {
  // Byte classes: a new class starts wherever some edge's range starts or ends.
  std::array<uint8_t, 257> boundary{};
  boundary[0] = 1;
  for (const auto& es : nfa.edges)
    for (const auto& e : es) boundary[e.lo] = 1, boundary[e.hi + 1] = 1;
  std::array<uint8_t, 256> byte_class{};
  std::vector<uint8_t> rep;
  for (int b = 0; b < 256; ++b) {
    if (boundary[b]) rep.push_back(static_cast<uint8_t>(b));
    byte_class[b] = static_cast<uint8_t>(rep.size() - 1);
  }
  const auto num_classes = static_cast<uint32_t>(rep.size());

  std::vector<uint32_t> stamp(nfa.size(), 0);
  uint32_t epoch = 0;
  std::vector<uint32_t> stack;
  // The epsilon closure of `set`, sorted.
  const auto close = [&](std::vector<uint32_t> set) {
    ++epoch;
    stack = set;
    for (uint32_t s : set) stamp[s] = epoch;
    while (!stack.empty()) {
      const uint32_t s = stack.back();
      stack.pop_back();
      for (uint32_t t : nfa.eps[s])
        if (stamp[t] != epoch) stamp[t] = epoch, set.push_back(t), stack.push_back(t);
    }
    std::sort(set.begin(), set.end());
    return set;
  };
  std::map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<const std::vector<uint32_t>*> sets;
  const auto id_of = [&](std::vector<uint32_t> set) {
    auto [it, fresh] = ids.emplace(std::move(set), static_cast<uint32_t>(sets.size()));
    if (fresh) sets.push_back(&it->first);
    return it->second;
  };
  ByteDfa out;
  out.byte_class = byte_class;
  out.num_classes = num_classes;
  out.start = id_of(close({nfa.start}));
  std::vector<uint32_t> moved;
  size_t work = 0;
  for (size_t s = 0; s < sets.size(); ++s) {
    if (OverLimits(sets.size(), num_classes)) return TooLarge();
    const std::vector<uint32_t>& set = *sets[s];
    work += set.size() * num_classes;
    if (work > kMaxDeterminizeWork)
      return Status(StatusCode::kResourceExhausted, "the automaton takes too long to build");
    out.accepting.push_back(std::binary_search(set.begin(), set.end(), nfa.accept) ? 1 : 0);
    for (uint32_t c = 0; c < num_classes; ++c) {
      moved.clear();
      ++epoch;
      for (uint32_t q : set)
        for (const auto& e : nfa.edges[q])
          if (e.lo <= rep[c] && rep[c] <= e.hi && stamp[e.to] != epoch)
            stamp[e.to] = epoch, moved.push_back(e.to);
      out.next.push_back(moved.empty() ? kDfaDead : id_of(close(moved)));
    }
  }
  return Trim(out);
}

Expected<ByteDfa> Intersect(const ByteDfa& a, const ByteDfa& b) {
  ByteDfa none;
  if (a.empty() || b.empty()) return none;
  // Classes of the product: pairs of classes that occur together.
  std::map<std::pair<uint8_t, uint8_t>, uint8_t> pair_class;
  std::array<uint8_t, 256> byte_class{};
  std::vector<std::pair<uint8_t, uint8_t>> pairs;
  for (int x = 0; x < 256; ++x) {
    const std::pair<uint8_t, uint8_t> p(a.byte_class[x], b.byte_class[x]);
    auto [it, fresh] = pair_class.emplace(p, static_cast<uint8_t>(pairs.size()));
    if (fresh) pairs.push_back(p);
    byte_class[x] = it->second;
  }
  const auto step = [&](uint64_t key, uint32_t c) -> uint64_t {
    const uint32_t sa = a.next[(key >> 32) * a.num_classes + pairs[c].first];
    const uint32_t sb = b.next[(key & 0xFFFFFFFFu) * b.num_classes + pairs[c].second];
    if (sa == kDfaDead || sb == kDfaDead) return kNoKey;
    return (uint64_t{sa} << 32) | sb;
  };
  const auto accept = [&](uint64_t key) {
    return a.accepting[key >> 32] && b.accepting[key & 0xFFFFFFFFu];
  };
  return Explore(byte_class, static_cast<uint32_t>(pairs.size()),
                 (uint64_t{a.start} << 32) | b.start, step, accept);
}

Expected<ByteDfa> LimitJsonChars(const ByteDfa& dfa, uint32_t min_chars, uint32_t max_chars) {
  ByteDfa none;
  if (dfa.empty() || min_chars > max_chars) return none;
  ByteDfa out = dfa;
  if (min_chars > 0) {
    // Counts saturate at min_chars: past it they no longer matter.
    const std::vector<uint8_t> between = BetweenChars(dfa);
    const uint32_t k = dfa.num_classes;
    const auto step = [&](uint64_t key, uint32_t c) -> uint64_t {
      const auto s = static_cast<uint32_t>(key >> 32);
      auto count = static_cast<uint32_t>(key & 0xFFFFFFFFu);
      const uint32_t t = dfa.next[size_t{s} * k + c];
      if (t == kDfaDead) return kNoKey;
      if (between[s]) count = std::min(count + 1, min_chars);
      return (uint64_t{t} << 32) | count;
    };
    const auto accept = [&](uint64_t key) {
      return dfa.accepting[key >> 32] && (key & 0xFFFFFFFFu) >= min_chars;
    };
    auto counted = Explore(dfa.byte_class, k, uint64_t{dfa.start} << 32, step, accept);
    if (!counted.ok()) return counted.status();
    out = std::move(*counted);
  }
  if (max_chars == 0xFFFFFFFFu || out.empty()) return out;
  // Fewest characters to an accepting state: a 0-1 breadth-first search
  // backwards (a byte that starts a character costs 1).
  const std::vector<uint8_t> between = BetweenChars(out);
  const size_t n = out.num_states();
  const uint32_t k = out.num_classes;
  std::vector<std::vector<std::pair<uint32_t, uint8_t>>> preds(n);
  for (uint32_t s = 0; s < n; ++s)
    for (uint32_t c = 0; c < k; ++c)
      if (const uint32_t t = out.next[size_t{s} * k + c]; t != kDfaDead)
        preds[t].emplace_back(s, between[s]);
  std::vector<uint32_t> dist(n, 0xFFFFFFFFu);
  std::deque<uint32_t> work;
  for (uint32_t s = 0; s < n; ++s)
    if (out.accepting[s]) dist[s] = 0, work.push_back(s);
  while (!work.empty()) {
    const uint32_t t = work.front();
    work.pop_front();
    for (const auto& [s, cost] : preds[t]) {
      if (dist[t] + cost >= dist[s]) continue;
      dist[s] = dist[t] + cost;
      if (cost)
        work.push_back(s);
      else
        work.push_front(s);
    }
  }
  if (dist[out.start] > max_chars) return none;
  out.max_chars = max_chars;
  out.chars_to_accept = std::move(dist);
  return out;
}

}  // namespace brisk
