// JSON Schema -> JsonGrammar (json_grammar.h), and the list of what the
// grammar does not enforce.
//
// Enforced: type (string or array; "nullable": true adds null), enum, const,
// properties, required, additionalProperties (false / true / schema),
// prefixItems, items (schema, or the older array form with
// additionalItems), minItems, maxItems, minLength, maxLength, minimum,
// maximum, exclusiveMinimum, exclusiveMaximum (numbers as JSON Schema 6+,
// booleans as draft 4), anyOf, oneOf, allOf (merged), $ref to "#..."
// pointers (recursion included; $defs / definitions), pattern (ECMA-262,
// unanchored as JSON Schema says) and format (date-time, date, time,
// email, hostname, uri, uri-reference, uuid, ipv4, ipv6) on strings, together with each
// other and with minLength / maxLength (string_pattern.h, byte_dfa.h);
// format int32, int64 and utc-millisec on numbers; patternProperties with
// one pattern (extra keys whose text the pattern's DFA accepts take its
// schema, after the listed properties); minProperties and maxProperties
// (members counted as written; unsatisfiable counts match nothing).
// JSON Schema makes format an annotation by default; Brisk enforces the
// formats it knows, as a generator should only write valid ones.
//
// Reported, never silently ignored: every other keyword that constrains
// (a pattern the regex parser cannot read (lookaround, backreferences,
// \b, \p{...}) or whose automaton is too large, a format not listed
// above, a minLength whose counter is too large next to a pattern,
// multipleOf, uniqueItems, contains, patternProperties with more than one
// pattern (or one a listed key also matches), propertyNames,
// minProperties >= 2 where extra keys are allowed (enforced on the members
// written, but an extra key written twice counts twice), if/then/else,
// not, dependent*, unevaluated*, ...), oneOf (enforced as anyOf: exclusivity is not), an allOf
// whose parts conflict in a way the merge cannot express, $ref to anything but a local pointer, and
// keywords next to enum/const other than type. Annotations (title, description, default, examples,
// $schema, $id, $comment, deprecated, readOnly, writeOnly, discriminator, ...) are ignored.
//
// Output shape choices (also in json_grammar.h): compact, properties in
// `properties` order (required ones always present, optional ones may be
// left out), extra members after listed ones. With
// CompileOptions::strict_defaults (the default, as XGrammar and OpenAI's
// strict mode do), a missing additionalProperties means none allowed and a
// missing items after prefixItems means no more items: the model cannot
// wander into invented keys; what it writes still validates. Integers are
// written without fraction or exponent; enum/const values exactly as their
// compact JSON text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/json_grammar.h"
#include "util/status.h"

namespace brisk {

struct UnenforcedKeyword {
  std::string keyword;  // "pattern"
  std::string pointer;  // JSON pointer of the schema holding it: "/properties/zip"
  // "pattern@/properties/zip"
  std::string ToString() const { return keyword + "@" + pointer; }
};

struct CompileOptions {
  bool strict_defaults = true;
};

struct CompiledSchema {
  JsonGrammar grammar;
  std::vector<UnenforcedKeyword> unenforced;
};

// InvalidArgument (naming the JSON pointer) for a schema that is not a
// schema: a keyword of the wrong type, an unknown type name, a $ref that
// does not resolve, nesting deeper than 128 levels.
Expected<CompiledSchema> CompileJsonSchema(const nlohmann::ordered_json& schema,
                                           const CompileOptions& options = {});
// Parses `text` first (InvalidArgument if it is not JSON).
Expected<CompiledSchema> CompileJsonSchemaText(std::string_view text,
                                               const CompileOptions& options = {});
// Any JSON object ({"type": "json_object"}).
CompiledSchema CompileAnyJsonObject();

// "a~1b" for "a/b": one JSON pointer reference token.
std::string JsonPointerToken(std::string_view key);

}  // namespace brisk
