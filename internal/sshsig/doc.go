// Package sshsig is the SSH signature format (OpenSSH's PROTOCOL.sshsig,
// what `ssh-keygen -Y sign` writes and `ssh-keygen -Y verify` reads), and
// the public keys people keep in authorized_keys and allowed_signers
// files. acr uses it so that an answer to a run proves who gave it: a
// person signs with the ssh key they already have, and the loop checks the
// signature against the keys the contract lists.
//
// Parsing and verifying are pure and deterministic (no file, clock or
// environment): the kernel verifies answers inside a cycle, and replay
// verifies them again. Signing takes an ssh.Signer (a key file or the ssh
// agent, loaded by the caller) and a source of randomness, because ECDSA
// signatures are randomised.
//
// The binary signature is
//
//	byte[6]  "SSHSIG"
//	uint32   1 (the version)
//	string   public key (the SSH wire form)
//	string   namespace ("acr" for acr's answers)
//	string   reserved (empty)
//	string   hash algorithm ("sha256" or "sha512")
//	string   signature (the SSH wire form: algorithm name, then blob)
//
// and what the key signs is
//
//	byte[6]  "SSHSIG"
//	string   namespace
//	string   reserved (empty)
//	string   hash algorithm
//	string   H(message)
//
// armored as base64 in lines of 70 characters between
// "-----BEGIN SSH SIGNATURE-----" and "-----END SSH SIGNATURE-----".
// Parse accepts exactly the armor Armor writes (what ssh-keygen writes);
// Decode accepts any line breaks, for files people bring.
package sshsig
