package sshsig

import (
	"bytes"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
)

// The armor lines and the width of the base64 lines between them.
const (
	beginArmor = "-----BEGIN SSH SIGNATURE-----"
	endArmor   = "-----END SSH SIGNATURE-----"
	armorWidth = 70
)

// magic opens both the signature and what is signed; version is the only
// signature version there is.
const (
	magic   = "SSHSIG"
	version = 1
)

// The hash algorithms a signature may name. ssh-keygen signs with SHA512.
const (
	HashSHA256 = "sha256"
	HashSHA512 = "sha512"
)

// MinRSABits is the smallest RSA key accepted: smaller keys are not safe
// to prove anything with.
const MinRSABits = 2048

// ErrVerify is returned when a signature does not verify: it was made
// over other bytes, in another namespace, or by another key.
var ErrVerify = errors.New("signature does not verify")

// keyTypes are the public key types accepted: ed25519, ECDSA on the NIST
// curves, and RSA. Security-key (sk-) and certificate types are not: an
// answer is signed by a plain key the contract lists.
func keyTypes() []string {
	return []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSA}
}

// Signature is one SSH signature, decoded.
type Signature struct {
	// PublicKey is the key that made it (not yet trusted: the verifier
	// decides whether it is a key it knows).
	PublicKey ssh.PublicKey
	// Namespace says what the signature is for; a signature made for one
	// namespace never verifies in another.
	Namespace string
	// HashAlgorithm is HashSHA256 or HashSHA512.
	HashAlgorithm string
	// Sig is the key's signature over the signed data.
	Sig *ssh.Signature
}

// ParsePublicKey parses one public key as an authorized_keys or
// allowed_signers line carries it: "TYPE BASE64 [COMMENT]", no options.
// The type written must be the key's, and the key an accepted type
// (ed25519, ECDSA, RSA of at least MinRSABits).
func ParsePublicKey(line string) (ssh.PublicKey, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return nil, errors.New(`want "TYPE BASE64 [COMMENT]", as in an authorized_keys file (e.g. "ssh-ed25519 AAAAC3Nza... alice@laptop")`)
	}
	typ := fields[0]
	if !slices.Contains(keyTypes(), typ) {
		return nil, fmt.Errorf("key type %q is not accepted (want one of %s)", typ, strings.Join(keyTypes(), ", "))
	}
	blob, err := base64.StdEncoding.Strict().DecodeString(fields[1])
	if err != nil {
		return nil, fmt.Errorf("%s key: base64: %w", typ, err)
	}
	pub, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", typ, err)
	}
	if pub.Type() != typ {
		return nil, fmt.Errorf("the line says %s but the key is %s", typ, pub.Type())
	}
	return pub, checkKey(pub)
}

// checkKey refuses keys of a type not accepted, and RSA keys too small.
func checkKey(pub ssh.PublicKey) error {
	if !slices.Contains(keyTypes(), pub.Type()) {
		return fmt.Errorf("key type %q is not accepted (want one of %s)", pub.Type(), strings.Join(keyTypes(), ", "))
	}
	if ck, ok := pub.(ssh.CryptoPublicKey); ok {
		if k, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && k.N.BitLen() < MinRSABits {
			return fmt.Errorf("RSA key of %d bits: want at least %d", k.N.BitLen(), MinRSABits)
		}
	}
	return nil
}

// Fingerprint is a key's SHA256 fingerprint as ssh-keygen -l prints it
// ("SHA256:" and unpadded base64).
func Fingerprint(pub ssh.PublicKey) string { return ssh.FingerprintSHA256(pub) }

// AuthorizedKey is a key as one authorized_keys line, without a comment
// or the newline.
func AuthorizedKey(pub ssh.PublicKey) string {
	return strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(pub)), "\n")
}

// signedData is what a key signs for message in namespace.
func signedData(namespace, hashAlg string, message []byte) ([]byte, error) {
	var h hash.Hash
	switch hashAlg {
	case HashSHA256:
		h = sha256.New()
	case HashSHA512:
		h = sha512.New()
	default:
		return nil, fmt.Errorf("hash algorithm %q is not accepted (want sha256 or sha512)", hashAlg)
	}
	h.Write(message)
	var b bytes.Buffer
	b.WriteString(magic)
	for _, s := range [][]byte{[]byte(namespace), nil, []byte(hashAlg), h.Sum(nil)} {
		putString(&b, s)
	}
	return b.Bytes(), nil
}

// Sign signs message in namespace with signer, hashing with SHA512 as
// ssh-keygen does. An RSA key signs with rsa-sha2-512 (the signer must
// then be an ssh.AlgorithmSigner, as keys parsed by x/crypto/ssh and the
// agent's signers are); rand feeds ECDSA.
func Sign(signer ssh.Signer, namespace string, message []byte, rand io.Reader) (*Signature, error) {
	pub := signer.PublicKey()
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	data, err := signedData(namespace, HashSHA512, message)
	if err != nil {
		return nil, err
	}
	var sig *ssh.Signature
	if pub.Type() == ssh.KeyAlgoRSA {
		as, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, errors.New("this RSA signer cannot sign with rsa-sha2-512")
		}
		sig, err = as.SignWithAlgorithm(rand, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return &Signature{PublicKey: pub, Namespace: namespace, HashAlgorithm: HashSHA512, Sig: sig}, nil
}

// Verify checks that s is a signature over message in namespace by the
// key it names. It does not say whether that key is one to trust: the
// caller compares s.PublicKey with the keys it knows.
func (s *Signature) Verify(namespace string, message []byte) error {
	if s.Namespace != namespace {
		return fmt.Errorf("%w: made for namespace %q, not %q", ErrVerify, s.Namespace, namespace)
	}
	if err := checkKey(s.PublicKey); err != nil {
		return err
	}
	if err := checkAlgorithm(s.PublicKey.Type(), s.Sig.Format); err != nil {
		return err
	}
	data, err := signedData(namespace, s.HashAlgorithm, message)
	if err != nil {
		return err
	}
	if err := s.PublicKey.Verify(data, s.Sig); err != nil {
		return fmt.Errorf("%w: %v", ErrVerify, err)
	}
	return nil
}

// checkAlgorithm refuses a signature algorithm that does not go with the
// key's type; for RSA only the SHA-2 algorithms (never SHA-1 ssh-rsa).
func checkAlgorithm(keyType, format string) error {
	ok := format == keyType
	if keyType == ssh.KeyAlgoRSA {
		ok = format == ssh.KeyAlgoRSASHA256 || format == ssh.KeyAlgoRSASHA512
	}
	if !ok {
		return fmt.Errorf("signature algorithm %q does not go with a %s key", format, keyType)
	}
	return nil
}

// Marshal encodes the signature in its binary form.
func (s *Signature) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	_ = binary.Write(&b, binary.BigEndian, uint32(version))
	putString(&b, s.PublicKey.Marshal())
	putString(&b, []byte(s.Namespace))
	putString(&b, nil)
	putString(&b, []byte(s.HashAlgorithm))
	putString(&b, ssh.Marshal(s.Sig))
	return b.Bytes()
}

// Armor encodes the signature as ssh-keygen writes it, ending in a newline.
func (s *Signature) Armor() string {
	enc := base64.StdEncoding.EncodeToString(s.Marshal())
	var b strings.Builder
	b.WriteString(beginArmor + "\n")
	for len(enc) > armorWidth {
		b.WriteString(enc[:armorWidth] + "\n")
		enc = enc[armorWidth:]
	}
	b.WriteString(enc + "\n" + endArmor + "\n")
	return b.String()
}

// Parse decodes an armored signature strictly: exactly the bytes Armor
// writes for it, so that a signature has one written form.
func Parse(armored string) (*Signature, error) {
	s, err := Decode(armored)
	if err != nil {
		return nil, err
	}
	if s.Armor() != armored {
		return nil, errors.New("signature: not in the armor ssh-keygen writes (base64 lines of 70 characters between the BEGIN and END lines, each ending in a newline)")
	}
	return s, nil
}

// Decode decodes an armored signature, allowing any line breaks and
// surrounding white space (a file someone brings); Parse is the strict
// form for what is recorded.
func Decode(armored string) (*Signature, error) {
	t := strings.TrimSpace(armored)
	body, ok := strings.CutPrefix(t, beginArmor)
	if ok {
		body, ok = strings.CutSuffix(body, endArmor)
	}
	if !ok {
		return nil, fmt.Errorf("signature: want %q ... %q", beginArmor, endArmor)
	}
	blob, err := base64.StdEncoding.Strict().DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, fmt.Errorf("signature: base64: %w", err)
	}
	return Unmarshal(blob)
}

// Unmarshal decodes the binary form strictly: the magic, version 1, an
// empty reserved field, a known hash algorithm, a signature that decodes
// whole, and no trailing bytes.
func Unmarshal(blob []byte) (*Signature, error) {
	rest, ok := bytes.CutPrefix(blob, []byte(magic))
	if !ok {
		return nil, errors.New("signature: does not start with SSHSIG")
	}
	if len(rest) < 4 || binary.BigEndian.Uint32(rest) != version {
		return nil, errors.New("signature: not version 1")
	}
	rest = rest[4:]
	var fields [5][]byte
	for i := range fields {
		var err error
		if fields[i], rest, err = getString(rest); err != nil {
			return nil, fmt.Errorf("signature: field %d: %w", i+1, err)
		}
	}
	if len(rest) != 0 {
		return nil, errors.New("signature: trailing bytes")
	}
	pub, err := ssh.ParsePublicKey(fields[0])
	if err != nil {
		return nil, fmt.Errorf("signature: public key: %w", err)
	}
	if !bytes.Equal(pub.Marshal(), fields[0]) {
		return nil, errors.New("signature: public key not in its canonical form")
	}
	if len(fields[2]) != 0 {
		return nil, errors.New("signature: reserved field not empty")
	}
	s := &Signature{PublicKey: pub, Namespace: string(fields[1]), HashAlgorithm: string(fields[3]), Sig: new(ssh.Signature)}
	if s.HashAlgorithm != HashSHA256 && s.HashAlgorithm != HashSHA512 {
		return nil, fmt.Errorf("signature: hash algorithm %q is not accepted (want sha256 or sha512)", s.HashAlgorithm)
	}
	if err := ssh.Unmarshal(fields[4], s.Sig); err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	if len(s.Sig.Rest) != 0 || !bytes.Equal(ssh.Marshal(s.Sig), fields[4]) {
		return nil, errors.New("signature: signature field not in its canonical form")
	}
	return s, nil
}

// putString writes an SSH string: a uint32 length, then the bytes.
func putString(b *bytes.Buffer, s []byte) {
	_ = binary.Write(b, binary.BigEndian, uint32(len(s)))
	b.Write(s)
}

// getString reads an SSH string.
func getString(b []byte) (s, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errors.New("truncated length")
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, errors.New("length past the end")
	}
	return b[4 : 4+n], b[4+n:], nil
}
