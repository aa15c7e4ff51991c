// Which member a TLS peer is: an identity proof inside the TLS channel.
//
// Why: CAF 0.17.6's OpenSSL module verifies that a peer's certificate chains to
// the CA, but gives the application neither a verify callback nor the peer's
// certificate, so a node cannot see which member a certificate names. Each side
// of the membership handshake therefore proves its member id itself: it sends
// its certificate (PEM) and a signature, made with its private key, over a
// statement (proof_statement) that names
//   - the role (dialing or accepting), so a proof made in one role is never
//     accepted in the other (no reflection between two handshakes),
//   - the cluster, the prover's id and the verifier's id, so a proof shown to
//     one member cannot be replayed to another,
//   - a fresh nonce of the verifier (and the prover's), so an old proof cannot
//     be replayed at all,
//   - the identity of the prover's candidate handle (CAF node id and actor id),
//     so a relaying peer cannot swap in an actor of its own.
// The verifier checks that the certificate chains to the CA (X509_verify_cert),
// that it names the claimed member (subject CN "node-I", exactly one CN; the
// certificates `cluster up` makes), and the signature (EVP_DigestVerify).
//
// Message flow (gate_actor.hpp, peer_connector.cpp), only with TLS:
//   dialer d -> gate g: challenge(cluster, d, nonce_d)
//   g -> d:             (nonce_g, cert_g, sig_g over [accepting, cluster, g, d,
//                        nonce_d, nonce_g, candidate_g], candidate_g identity)
//   d checks g's proof, then hello(cluster, d, candidate_d, nonce_g, cert_d,
//                        sig_d over [dialing, cluster, d, g, nonce_g, nonce_d,
//                        candidate_d])
//   g redeems nonce_g (single use, issued to d), checks d's proof, links d.
//
// Bound to the TLS session: the gate and the dialer also require that the
// hello (answer) and its candidate come from the CAF node of a TLS session
// whose certificate names the claimed member (tls_session_is_member,
// peer_links.hpp), and frames naming another node than their session's are
// refused before CAF reads them (basp_source_guard.hpp). Not stopped: a holder
// of a valid certificate still reaches CAF's wire protocol as its own node and
// can message actors it can address (docs/design/node.md, Security model).
// No crypto of our own: OpenSSL's X509 and EVP APIs do all of it.
#pragma once

#include "runtime/node/node_config.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

// OpenSSL's types stay opaque in this header.
struct evp_pkey_st;
struct x509_store_st;

namespace conclave::node {

/// Why a peer's identity proof was refused (metric label of
/// conclave_rejected_messages_total).
enum class identity_refusal {
  none,
  missing_proof,         ///< no certificate, no signature or a malformed nonce
  untrusted_certificate, ///< not PEM, or does not chain to the CA (or expired)
  wrong_member_id,       ///< the certificate names another member, or none
  bad_signature,         ///< the signature does not cover this statement with this key
  stale_nonce,           ///< the answer names no challenge this gate has open
  wrong_session,         ///< the TLS session carrying it holds another certificate
};

std::string_view to_string(identity_refusal r);

/// Which side of the handshake made a proof.
enum class proof_role : uint8_t { dialing = 1, accepting = 2 };

/// What a proof signs (see the header comment).
struct proof_statement {
  proof_role role = proof_role::dialing;
  std::string cluster;
  uint64_t prover = 0;
  uint64_t verifier = 0;
  std::string verifier_nonce;
  std::string prover_nonce;
  std::string prover_candidate; ///< identity of the prover's candidate handle

  /// Unambiguous bytes to sign: a version tag, the role, then every field
  /// (strings length-prefixed, ids as 8 big-endian bytes).
  std::string encode() const;
};

struct identity_proof {
  std::string certificate_pem; ///< the prover's certificate (and any intermediates)
  std::string signature;
};

/// Bytes of a fresh nonce.
inline constexpr size_t nonce_size = 32;

/// A fresh random nonce (OpenSSL's RAND_bytes).
std::string make_nonce();

/// The member id the first certificate in `pem` names: its subject has exactly
/// one CN, "node-I" with I a decimal id without leading zeros. nullopt if not.
std::optional<uint64_t> member_id_named(std::string_view pem);

/// This node's certificate and private key: makes its proofs.
class node_identity {
public:
  /// Reads the certificate (chain) and the key; the error is one line naming
  /// the file. An encrypted key is refused (no prompt).
  static result<node_identity> load(const std::string& cert_file,
                                    const std::string& key_file);

  const std::string& certificate_pem() const { return pem_; }
  /// The member id its certificate names (member_id_named).
  std::optional<uint64_t> named_member() const { return member_id_named(pem_); }

  /// Signs `s` (EC and RSA keys: SHA-256; Ed25519: the scheme's own).
  identity_proof prove(const proof_statement& s) const;

private:
  std::string pem_;
  std::shared_ptr<evp_pkey_st> key_;
};

/// The CA a node trusts: checks other members' proofs. Thread-safe.
class proof_verifier {
public:
  /// Reads the CA file; the error is one line naming it.
  static result<proof_verifier> load(const std::string& ca_file);

  /// Checks `p` for statement `s`: the certificate chains to the CA, names
  /// member `s.prover`, and signs `s`. The first failure is the answer.
  identity_refusal verify(const identity_proof& p, const proof_statement& s) const;

private:
  std::shared_ptr<x509_store_st> store_;
};

/// Both halves a node needs with TLS.
struct peer_authenticator {
  node_identity self;
  proof_verifier verifier;

  /// Loads both (the --tls-ca, --tls-cert and --tls-key files); the error is
  /// one line naming the flag and file.
  static result<std::shared_ptr<const peer_authenticator>>
  load(const std::string& ca_file, const std::string& cert_file,
       const std::string& key_file);
};

/// The nonces a gate has handed out and not yet seen answered. Each is issued
/// to one member, used once; the oldest is forgotten beyond `capacity` (a
/// dialer whose challenge was forgotten retries).
class challenge_book {
public:
  explicit challenge_book(size_t capacity = 64) : capacity_(capacity) {}

  /// Opens a challenge for `member`, who sent `its_nonce`; returns this side's nonce.
  std::string issue(uint64_t member, std::string its_nonce);

  /// Closes the challenge `nonce` if it was issued to `member`; returns the
  /// member's nonce of that challenge, nullopt if none is open.
  std::optional<std::string> redeem(uint64_t member, const std::string& nonce);

  size_t open() const { return open_.size(); }

private:
  struct entry {
    uint64_t member;
    std::string nonce;
    std::string its_nonce;
  };
  size_t capacity_;
  std::deque<entry> open_;
};

} // namespace conclave::node
