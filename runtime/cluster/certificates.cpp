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
                     const std::vector<uint64_t>& ids) {
  // EC P-256 keys: generated in milliseconds, unlike RSA.
  const std::vector<std::string> key{"-newkey", "ec", "-pkeyopt",
                                     "ec_paramgen_curve:prime256v1", "-nodes"};
  std::vector<std::vector<std::string>> cmds;
  std::vector<std::string> ca{"req", "-x509"};
  ca.insert(ca.end(), key.begin(), key.end());
  ca.insert(ca.end(), {"-keyout", p(dir, "ca.key"), "-out", p(dir, "ca.pem"), "-days",
                       "30", "-subj", "/O=conclave/CN=" + cluster + " throwaway CA"});
  cmds.push_back(ca);
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
    cmds.push_back({"x509", "-req", "-in", p(dir, n + ".csr"), "-CA", p(dir, "ca.pem"),
                    "-CAkey", p(dir, "ca.key"), "-CAcreateserial", "-CAserial",
                    p(dir, "ca.srl"), "-out", p(dir, n + ".pem"), "-days", "30"});
  }
  return cmds;
}

node::result<void> make_certificates(const std::string& dir, const std::string& cluster,
                                     const std::vector<uint64_t>& ids) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return "cannot create " + dir + ": " + ec.message();
  ::chmod(dir.c_str(), 0700); // the keys are inside
  auto log = p(dir, "openssl.log");
  fs::remove(log, ec);
  for (auto& args : certificate_commands(dir, cluster, ids)) {
    int st = run_openssl(args, log);
    if (st == 127)
      return std::string{"cannot run the openssl tool (Debian package openssl; or "
                         "give --insecure)"};
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
