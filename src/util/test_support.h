// For tests only. A test that needs something the setup installs (the
// default model, Gemma 3, a fixture, a Debian package) skips when it is
// missing on a developer's machine, and fails in CI (CI set in the
// environment), where setup must have installed it: a silent skip there would
// hide a broken install step.
#pragma once

#include <cstdlib>

// Use inside a TEST body or a fixture's SetUp (it returns from the function).
#define BRISK_SKIP_OR_FAIL_MISSING(what)                                          \
  do {                                                                            \
    if (std::getenv("CI") != nullptr) {                                           \
      GTEST_FAIL() << "missing in CI (setup should have installed it): " << what; \
    } else {                                                                      \
      GTEST_SKIP() << "not installed: " << what;                                  \
    }                                                                             \
  } while (0)

namespace brisk {

// True in the AddressSanitizer build (CI's sanitizer pass, where the model
// runs 10x slower). Tests whose point is equality over many prompts take a
// smaller set there: the same code paths for the sanitizers to watch; the full
// set runs in the normal build.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

}  // namespace brisk
