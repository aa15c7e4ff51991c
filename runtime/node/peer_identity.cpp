#include "runtime/node/peer_identity.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace conclave::node {

namespace {

/// Largest certificate file a peer may send (a chain of a few certificates).
constexpr size_t max_certificate_bytes = 64 * 1024;

struct bio_free {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
struct x509_stack_free {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};
struct store_ctx_free {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
struct md_ctx_free {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

using bio_ptr = std::unique_ptr<BIO, bio_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;
using x509_stack_ptr = std::unique_ptr<STACK_OF(X509), x509_stack_free>;

/// Never prompts for a passphrase (PEM's default would read the terminal).
int no_passphrase(char*, int, int, void*) {
  return 0;
}

bio_ptr memory_bio(std::string_view text) {
  return bio_ptr{BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
}

/// Every certificate in `pem`, in order; empty if none parses.
std::vector<x509_ptr> read_certificates(std::string_view pem) {
  std::vector<x509_ptr> out;
  if (pem.empty() || pem.size() > max_certificate_bytes)
    return out;
  auto bio = memory_bio(pem);
  while (auto* x = PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr))
    out.emplace_back(x);
  ERR_clear_error(); // the end of the input leaves a "no start line" error
  return out;
}

std::optional<uint64_t> member_id_of(X509* cert) {
  auto* name = X509_get_subject_name(cert);
  int at = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (at < 0 || X509_NAME_get_index_by_NID(name, NID_commonName, at) >= 0)
    return std::nullopt; // no CN, or more than one
  auto* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
  std::string_view cn{reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                      static_cast<size_t>(ASN1_STRING_length(data))};
  constexpr std::string_view prefix = "node-";
  if (cn.substr(0, prefix.size()) != prefix)
    return std::nullopt;
  auto digits = cn.substr(prefix.size());
  if (digits.empty() || digits.size() > 19 || (digits.size() > 1 && digits[0] == '0')
      || !std::all_of(digits.begin(), digits.end(),
                      [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  uint64_t id = 0;
  for (char c : digits)
    id = id * 10 + static_cast<uint64_t>(c - '0');
  return id;
}

/// The digest to use with `key`: none for the schemes that hash themselves.
const EVP_MD* digest_for(EVP_PKEY* key) {
  if (EVP_PKEY_is_a(key, "ED25519") || EVP_PKEY_is_a(key, "ED448"))
    return nullptr;
  return EVP_sha256();
}

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put_u64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_bytes(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

} // namespace

std::string_view to_string(identity_refusal r) {
  switch (r) {
  case identity_refusal::none:
    return "none";
  case identity_refusal::missing_proof:
    return "missing_proof";
  case identity_refusal::untrusted_certificate:
    return "untrusted_certificate";
  case identity_refusal::wrong_member_id:
    return "wrong_member_id";
  case identity_refusal::bad_signature:
    return "bad_signature";
  case identity_refusal::stale_nonce:
    return "stale_nonce";
  case identity_refusal::wrong_session:
    return "wrong_session";
  }
  return "unknown";
}

std::string proof_statement::encode() const {
  std::string out{"conclave identity proof v1"};
  out.push_back('\0');
  out.push_back(static_cast<char>(role));
  put_bytes(out, cluster);
  put_u64(out, prover);
  put_u64(out, verifier);
  put_bytes(out, verifier_nonce);
  put_bytes(out, prover_nonce);
  put_bytes(out, prover_candidate);
  return out;
}

std::string make_nonce() {
  std::string n(nonce_size, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size()))
      != 1)
    // OpenSSL's generator failed (not seeded): no proof can be fresh; a
    // constant nonce makes every proof of ours fail at the verifier instead.
    return std::string(nonce_size, '\0');
  return n;
}

std::optional<uint64_t> member_id_named(std::string_view pem) {
  auto certs = read_certificates(pem);
  if (certs.empty())
    return std::nullopt;
  return member_id_of(certs.front().get());
}

// -- node_identity -------------------------------------------------------------

result<node_identity> node_identity::load(const std::string& cert_file,
                                          const std::string& key_file) {
  auto pem = read_text_file(cert_file);
  if (!pem || read_certificates(*pem).empty())
    return "--tls-cert: " + cert_file + " holds no PEM certificate";
  auto key_text = read_text_file(key_file);
  if (!key_text)
    return "--tls-key: cannot read " + key_file;
  auto bio = memory_bio(*key_text);
  auto* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr);
  ERR_clear_error();
  if (key == nullptr)
    return "--tls-key: " + key_file + " holds no unencrypted PEM private key";
  node_identity id;
  id.pem_ = std::move(*pem);
  id.key_ = std::shared_ptr<EVP_PKEY>{key, EVP_PKEY_free};
  return id;
}

identity_proof node_identity::prove(const proof_statement& s) const {
  identity_proof p{pem_, {}};
  auto bytes = s.encode();
  std::unique_ptr<EVP_MD_CTX, md_ctx_free> ctx{EVP_MD_CTX_new()};
  size_t len = 0;
  if (!ctx
      || EVP_DigestSignInit(ctx.get(), nullptr, digest_for(key_.get()), nullptr,
                            key_.get())
             != 1
      || EVP_DigestSign(ctx.get(), nullptr, &len,
                        reinterpret_cast<const unsigned char*>(bytes.data()),
                        bytes.size())
             != 1) {
    ERR_clear_error();
    return p; // an empty signature: the verifier refuses it
  }
  p.signature.resize(len);
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(p.signature.data()),
                     &len, reinterpret_cast<const unsigned char*>(bytes.data()),
                     bytes.size())
      != 1) {
    ERR_clear_error();
    p.signature.clear();
    return p;
  }
  p.signature.resize(len);
  return p;
}

// -- proof_verifier ------------------------------------------------------------

result<proof_verifier> proof_verifier::load(const std::string& ca_file) {
  std::shared_ptr<X509_STORE> store{X509_STORE_new(), X509_STORE_free};
  if (!store || X509_STORE_load_file(store.get(), ca_file.c_str()) != 1) {
    ERR_clear_error();
    return "--tls-ca: " + ca_file + " holds no PEM CA certificate";
  }
  proof_verifier v;
  v.store_ = std::move(store);
  return v;
}

identity_refusal proof_verifier::verify(const identity_proof& p,
                                        const proof_statement& s) const {
  if (p.certificate_pem.empty() || p.signature.empty())
    return identity_refusal::missing_proof;
  auto certs = read_certificates(p.certificate_pem);
  if (certs.empty())
    return identity_refusal::untrusted_certificate;
  // The leaf first, any intermediates after it (as in a certificate chain file).
  x509_stack_ptr chain{sk_X509_new_null()};
  for (size_t i = 1; i < certs.size(); ++i)
    if (sk_X509_push(chain.get(), certs[i].get()) > 0)
      X509_up_ref(certs[i].get());
  std::unique_ptr<X509_STORE_CTX, store_ctx_free> ctx{X509_STORE_CTX_new()};
  if (!ctx
      || X509_STORE_CTX_init(ctx.get(), store_.get(), certs.front().get(), chain.get())
             != 1
      || X509_verify_cert(ctx.get()) != 1) {
    ERR_clear_error();
    return identity_refusal::untrusted_certificate;
  }
  if (member_id_of(certs.front().get()) != s.prover)
    return identity_refusal::wrong_member_id;
  auto* key = X509_get0_pubkey(certs.front().get());
  auto bytes = s.encode();
  std::unique_ptr<EVP_MD_CTX, md_ctx_free> md{EVP_MD_CTX_new()};
  bool ok = key != nullptr && md
            && EVP_DigestVerifyInit(md.get(), nullptr, digest_for(key), nullptr, key) == 1
            && EVP_DigestVerify(
                   md.get(), reinterpret_cast<const unsigned char*>(p.signature.data()),
                   p.signature.size(),
                   reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size())
                   == 1;
  ERR_clear_error();
  return ok ? identity_refusal::none : identity_refusal::bad_signature;
}

result<std::shared_ptr<const peer_authenticator>>
peer_authenticator::load(const std::string& ca_file, const std::string& cert_file,
                         const std::string& key_file) {
  auto verifier = proof_verifier::load(ca_file);
  if (!verifier)
    return verifier.error();
  auto self = node_identity::load(cert_file, key_file);
  if (!self)
    return self.error();
  return std::make_shared<const peer_authenticator>(
      peer_authenticator{std::move(self.value()), std::move(verifier.value())});
}

// -- challenge_book ------------------------------------------------------------

std::string challenge_book::issue(uint64_t member, std::string its_nonce) {
  auto nonce = make_nonce();
  open_.push_back({member, nonce, std::move(its_nonce)});
  while (open_.size() > capacity_)
    open_.pop_front();
  return nonce;
}

std::optional<std::string> challenge_book::redeem(uint64_t member,
                                                  const std::string& nonce) {
  auto i = std::find_if(open_.begin(), open_.end(), [&](const entry& e) {
    return e.member == member && e.nonce == nonce;
  });
  if (i == open_.end())
    return std::nullopt;
  auto its = std::move(i->its_nonce);
  open_.erase(i);
  return its;
}

} // namespace conclave::node
