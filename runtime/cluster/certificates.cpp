#include "runtime/cluster/certificates.hpp"
#include "runtime/cluster/child_stdio.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace conclave::cluster {

namespace fs = std::filesystem;

namespace {

/// Runs `openssl ARGS` with stdout and stderr appended to `log`; its exit status,
/// or -1 if it could not run.
int run_openssl(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv_strings{"openssl"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  auto pid = ::fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    redirect_child_stdio(log.c_str(), 0600);
    ::execvp("openssl", argv.data());
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string p(const std::string& dir, const std::string& file) {
  return (fs::path{dir} / file).string();
}

} // namespace

std::vector<std::vector<std::string>>
certificate_commands(const std::string& dir, const std::string& cluster,
                     const std::vector<uint64_t>& ids, const certificate_options& o) {
  // EC P-256 keys: generated in milliseconds, unlike RSA.
  const std::vector<std::string> key{"-newkey", "ec", "-pkeyopt",
                                     "ec_paramgen_curve:prime256v1", "-nodes"};
  std::vector<std::vector<std::string>> cmds;
  bool own_ca = !o.ca_cert.empty();
  auto ca_cert = own_ca ? o.ca_cert : p(dir, "ca.pem");
  auto ca_key = own_ca ? o.ca_key : p(dir, "ca.key");
  if (!own_ca) {
    std::vector<std::string> ca{"req", "-x509"};
    ca.insert(ca.end(), key.begin(), key.end());
    ca.insert(ca.end(),
              {"-keyout", ca_key, "-out", ca_cert, "-days", std::to_string(o.ca_days),
               "-subj",
               "/O=conclave/CN="
                   + (o.ca_name.empty() ? cluster + " throwaway CA" : o.ca_name)});
    cmds.push_back(ca);
  }
  std::vector<std::string> names;
  for (auto id : ids)
    names.push_back("node-" + std::to_string(id));
  // The client certificate: CN "client" names no member, so the identity
  // proof (runtime/node/peer_identity.hpp) refuses it as any member id; the
  // TLS layer accepts it (same CA) and the gate serves it client hellos.
  names.push_back(client_certificate_name);
  for (auto& n : names) {
    std::vector<std::string> req{"req"};
    req.insert(req.end(), key.begin(), key.end());
    req.insert(req.end(), {"-keyout", p(dir, n + ".key"), "-out", p(dir, n + ".csr"),
                           "-subj", "/O=" + cluster + "/CN=" + n});
    cmds.push_back(req);
    // The serial file stays here, never next to a CA the user gave.
    cmds.push_back({"x509", "-req", "-in", p(dir, n + ".csr"), "-CA", ca_cert, "-CAkey",
                    ca_key, "-CAcreateserial", "-CAserial", p(dir, "ca.srl"), "-out",
                    p(dir, n + ".pem"), "-days", std::to_string(o.days)});
  }
  return cmds;
}

node::result<void> make_certificates(const std::string& dir, const std::string& cluster,
                                     const std::vector<uint64_t>& ids,
                                     const certificate_options& o) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return "cannot create " + dir + ": " + ec.message();
  ::chmod(dir.c_str(), 0700); // the keys are inside
  auto log = p(dir, "openssl.log");
  fs::remove(log, ec);
  if (!o.ca_cert.empty()) {
    // Nodes and clients find the CA as ca.pem next to their own files.
    fs::copy_file(o.ca_cert, p(dir, "ca.pem"), fs::copy_options::overwrite_existing, ec);
    if (ec)
      return "cannot copy " + o.ca_cert + " to " + p(dir, "ca.pem") + ": " + ec.message();
  }
  for (auto& args : certificate_commands(dir, cluster, ids, o)) {
    int st = run_openssl(args, log);
    if (st == 127)
      return std::string{"cannot run the openssl tool (Debian package openssl)"};
    if (st != 0)
      return "openssl " + args.front() + " failed (see " + log + ")";
  }
  for (auto& entry : fs::directory_iterator{dir, ec})
    if (entry.path().extension() == ".key")
      ::chmod(entry.path().c_str(), 0600);
  return node::outcome::success();
}

node_certificate client_certificate_of(const std::string& dir) {
  return {p(dir, "ca.pem"), p(dir, std::string{client_certificate_name} + ".pem"),
          p(dir, std::string{client_certificate_name} + ".key")};
}

node_certificate certificate_of(const std::string& dir, uint64_t id) {
  auto n = "node-" + std::to_string(id);
  return {p(dir, "ca.pem"), p(dir, n + ".pem"), p(dir, n + ".key")};
}

} // namespace conclave::cluster
