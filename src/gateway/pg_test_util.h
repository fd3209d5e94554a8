// A real PostgreSQL server for the gateway's GoogleTests, started once per
// test program by scripts/pg_test_server.sh (Debian's postgresql; as root the
// server runs as the `postgres` user), with a database of its own for each
// test (url_). Without PostgreSQL installed the tests skip, or fail when CI
// is set.
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "util/test_support.h"

namespace brisk::gateway::test {

namespace fs = std::filesystem;

inline const std::string kScript = std::string(BRISK_SOURCE_DIR) + "/scripts/pg_test_server.sh";

// Runs a shell command; its stdout and exit status.
inline std::pair<std::string, int> RunShell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {"", -1};
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// One SQL statement on its own connection (test set-up and inspection).
inline std::string Sql(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);
  std::string out;
  if (PQstatus(c) != CONNECTION_OK) {
    out = std::string("ERROR ") + PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) {
      out = PQgetvalue(r, 0, 0);
    } else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      out = std::string("ERROR ") + PQresultErrorMessage(r);
    }
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

class PostgresTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto [bindir, rc] = RunShell("bash " + kScript + " bindir 2>&1");
    if (rc == 3) {
      missing_ = true;
      return;
    }
    // The free port may be taken between FreePort() and the server's bind
    // (tests run in parallel): a few tries, each in a fresh directory.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (!dir_.empty()) fs::remove_all(dir_);
      std::string tmpl = (fs::temp_directory_path() / "brisk-pg-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) {
        start_error_ = "mkdtemp failed";
        return;
      }
      dir_ = tmpl;
      const int port = FreePort();
      auto [url, start_rc] =
          RunShell(fmt::format("bash {} start {} {} 2>{}/start.err", kScript, dir_, port, dir_));
      if (start_rc == 0) {
        server_url_ = url;  // postgresql://postgres@127.0.0.1:PORT/postgres
        start_error_.clear();
        return;
      }
      std::ifstream err(dir_ + "/start.err");
      std::stringstream ss;
      ss << err.rdbuf();
      start_error_ = fmt::format("pg_test_server.sh start failed ({}): {}", start_rc, ss.str());
      RunShell(fmt::format("bash {} stop {} immediate 2>&1", kScript, dir_));
    }
  }

  static void TearDownTestSuite() {
    if (!dir_.empty()) {
      RunShell(fmt::format("bash {} stop {} immediate 2>&1", kScript, dir_));
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  void SetUp() override {
    if (missing_) BRISK_SKIP_OR_FAIL_MISSING("PostgreSQL server (Debian package postgresql)");
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    db_ = "t_" + name;
    ASSERT_EQ(Sql(server_url_, "DROP DATABASE IF EXISTS " + db_), "");
    ASSERT_EQ(Sql(server_url_, "CREATE DATABASE " + db_), "");
    url_ = server_url_.substr(0, server_url_.rfind('/') + 1) + db_;
  }

  static inline bool missing_ = false;
  static inline std::string start_error_;
  static inline std::string dir_;
  static inline std::string server_url_;
  std::string db_;
  std::string url_;
};

}  // namespace brisk::gateway::test
