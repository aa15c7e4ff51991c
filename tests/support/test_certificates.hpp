// Certificates for tests of TLS and identity proofs: a throwaway CA and node
// certificates (subject CN node-I, EC P-256) made by the `openssl` tool in a
// temporary directory, removed with it. Same shape as `cluster up` makes.
#pragma once

#include "tests/support/process_tools.hpp"
#include "tests/support/temp_dir.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace conclave::test {

class test_certificates {
public:
  /// A CA and one certificate per id; `subjects` overrides the CN of an id's
  /// certificate when given (same order as `ids`).
  explicit test_certificates(const std::vector<uint64_t>& ids,
                             const std::vector<std::string>& subjects = {})
      : dir_("conclave-certs") {
    openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "
            + file("ca.key") + " -out " + ca() + " -days 2 -subj '/O=test/CN=test CA'");
    for (size_t i = 0; i < ids.size(); ++i) {
      auto n = "node-" + std::to_string(ids[i]);
      auto cn = i < subjects.size() ? subjects[i] : n;
      openssl("req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "
              + key(ids[i]) + " -out " + file(n + ".csr") + " -subj '/O=test/CN=" + cn
              + "'");
      openssl("x509 -req -in " + file(n + ".csr") + " -CA " + ca() + " -CAkey "
              + file("ca.key") + " -CAcreateserial -CAserial " + file("ca.srl") + " -out "
              + cert(ids[i]) + " -days 2");
    }
  }

  std::string ca() const { return file("ca.pem"); }
  std::string cert(uint64_t id) const {
    return file("node-" + std::to_string(id) + ".pem");
  }
  std::string key(uint64_t id) const {
    return file("node-" + std::to_string(id) + ".key");
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

private:
  void openssl(const std::string& args) const {
    auto r = conclave::testing::run_command("openssl " + args + " 2>&1");
    if (r.status != 0)
      throw std::runtime_error("openssl " + args + ": " + r.out);
  }

  temp_dir dir_;
};

} // namespace conclave::test
