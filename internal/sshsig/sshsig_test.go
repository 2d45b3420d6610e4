package sshsig

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// keyTypesForTest are the ssh-keygen -t arguments of every accepted kind.
func keyTypesForTest() [][]string {
	return [][]string{{"-t", "ed25519"}, {"-t", "ecdsa", "-b", "256"}, {"-t", "ecdsa", "-b", "384"}, {"-t", "ecdsa", "-b", "521"}, {"-t", "rsa", "-b", "2048"}}
}

// keygen makes a key pair with ssh-keygen in dir and returns the private
// key's path; the test is skipped where ssh-keygen is not installed.
func keygen(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed")
	}
	path := filepath.Join(dir, strings.Join(args, ""))
	cmd := exec.Command("ssh-keygen", append([]string{"-q", "-N", "", "-C", "alice@laptop", "-f", path}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
	}
	return path
}

func readSigner(t *testing.T, path string) ssh.Signer {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readPublic(t *testing.T, path string) ssh.PublicKey {
	t.Helper()
	b, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(string(b))
	if err != nil {
		t.Fatalf("parse %s.pub: %v", path, err)
	}
	return pub
}

// TestSshKeygenSignsAcrVerifies: a signature ssh-keygen -Y sign writes
// parses strictly and verifies, over exactly the message and namespace.
func TestSshKeygenSignsAcrVerifies(t *testing.T) {
	for _, kt := range keyTypesForTest() {
		t.Run(strings.Join(kt, ""), func(t *testing.T) {
			dir := t.TempDir()
			key := keygen(t, dir, kt...)
			msg := filepath.Join(dir, "answer.json")
			if err := os.WriteFile(msg, []byte(`{"verdict":"approve"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-f", key, "-n", "acr", msg).CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
			}
			armored, err := os.ReadFile(msg + ".sig")
			if err != nil {
				t.Fatal(err)
			}
			sig, err := Parse(string(armored))
			if err != nil {
				t.Fatalf("parse ssh-keygen's signature: %v\n%s", err, armored)
			}
			if !bytes.Equal(sig.PublicKey.Marshal(), readPublic(t, key).Marshal()) {
				t.Fatal("the signature names another key")
			}
			if err := sig.Verify("acr", []byte(`{"verdict":"approve"}`)); err != nil {
				t.Fatalf("verify: %v", err)
			}
			for _, bad := range []struct{ ns, msg string }{{"acr", `{"verdict":"deny"}`}, {"git", `{"verdict":"approve"}`}} {
				if err := sig.Verify(bad.ns, []byte(bad.msg)); !errors.Is(err, ErrVerify) {
					t.Errorf("verify in %q over %s: got %v, want ErrVerify", bad.ns, bad.msg, err)
				}
			}
		})
	}
}

// TestAcrSignsSshKeygenVerifies: ssh-keygen -Y verify accepts what Sign
// writes, against an allowed_signers file made of the public key line.
func TestAcrSignsSshKeygenVerifies(t *testing.T) {
	for _, kt := range keyTypesForTest() {
		t.Run(strings.Join(kt, ""), func(t *testing.T) {
			dir := t.TempDir()
			key := keygen(t, dir, kt...)
			msg := []byte(`{"by":"alice","verdict":"approve"}`)
			sig, err := Sign(readSigner(t, key), "acr", msg, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if err := sig.Verify("acr", msg); err != nil {
				t.Fatalf("verify own signature: %v", err)
			}
			pub, err := os.ReadFile(key + ".pub")
			if err != nil {
				t.Fatal(err)
			}
			signers := filepath.Join(dir, "allowed_signers")
			sigFile := filepath.Join(dir, "answer.sig")
			if err := os.WriteFile(signers, append([]byte("alice "), pub...), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(sigFile, []byte(sig.Armor()), 0o600); err != nil {
				t.Fatal(err)
			}
			verify := func(namespace string, msg []byte) error {
				cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "alice", "-n", namespace, "-s", sigFile)
				cmd.Stdin = bytes.NewReader(msg)
				out, err := cmd.CombinedOutput()
				if err != nil {
					return errors.New(string(out))
				}
				return nil
			}
			if err := verify("acr", msg); err != nil {
				t.Fatalf("ssh-keygen -Y verify refused acr's signature: %v", err)
			}
			if verify("acr", []byte(`{"by":"alice","verdict":"deny"}`)) == nil {
				t.Fatal("ssh-keygen -Y verify accepted the signature over other bytes")
			}
		})
	}
}

func TestParsePublicKey(t *testing.T) {
	dir := t.TempDir()
	key := keygen(t, dir, "-t", "ed25519")
	line, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	small := keygen(t, dir, "-t", "rsa", "-b", "1024")
	smallLine, err := os.ReadFile(small + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(line))
	for _, tc := range []struct {
		name, line, err string
	}{
		{"with comment", string(line), ""},
		{"without comment", fields[0] + " " + fields[1], ""},
		{"empty", "", "want"},
		{"options first", `restrict ` + string(line), "not accepted"},
		{"type lies", "ssh-rsa " + fields[1], "the line says ssh-rsa"},
		{"bad base64", "ssh-ed25519 AAAA%%%", "base64"},
		{"security key", "sk-ssh-ed25519@openssh.com " + fields[1], "not accepted"},
		{"small rsa", string(smallLine), "at least 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, err := ParsePublicKey(tc.line)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := AuthorizedKey(pub); got != fields[0]+" "+fields[1] {
					t.Errorf("AuthorizedKey = %q", got)
				}
				if !strings.HasPrefix(Fingerprint(pub), "SHA256:") {
					t.Errorf("Fingerprint = %q", Fingerprint(pub))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error containing %q", err, tc.err)
			}
		})
	}
}

// TestParseIsStrict: the recorded form is exactly Armor's; Decode takes
// other line breaks, Parse does not; a changed byte of the binary form is
// refused or fails to verify.
func TestParseIsStrict(t *testing.T) {
	key := keygen(t, t.TempDir(), "-t", "ed25519")
	sig, err := Sign(readSigner(t, key), "acr", []byte("m"), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	armored := sig.Armor()
	if _, err := Parse(armored); err != nil {
		t.Fatal(err)
	}
	rewrapped := strings.ReplaceAll(armored, "\n", "\r\n")
	if _, err := Parse(rewrapped); err == nil {
		t.Error("Parse took CRLF line ends")
	}
	if d, err := Decode(rewrapped); err != nil || d.Armor() != armored {
		t.Errorf("Decode of CRLF: %v", err)
	}
	blob := sig.Marshal()
	for i := range blob {
		b := bytes.Clone(blob)
		b[i] ^= 0x01
		s, err := Unmarshal(b)
		if err == nil && s.Verify("acr", []byte("m")) == nil {
			t.Fatalf("byte %d flipped: still verifies", i)
		}
	}
	if _, err := Unmarshal(append(bytes.Clone(blob), 0)); err == nil {
		t.Error("trailing byte accepted")
	}
}

// FuzzParse: anything Parse accepts is one signature with one written
// form: it re-armors to the same bytes, and its binary form decodes back
// to the same binary form.
func FuzzParse(f *testing.F) {
	f.Add("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n")
	if _, err := exec.LookPath("ssh-keygen"); err == nil {
		dir := f.TempDir()
		for _, kt := range keyTypesForTest() {
			path := filepath.Join(dir, strings.Join(kt, ""))
			if exec.Command("ssh-keygen", append([]string{"-q", "-N", "", "-f", path}, kt...)...).Run() != nil {
				continue
			}
			b, _ := os.ReadFile(path)
			s, err := ssh.ParsePrivateKey(b)
			if err != nil {
				continue
			}
			if sig, err := Sign(s, "acr", []byte("m"), rand.Reader); err == nil {
				f.Add(sig.Armor())
			}
		}
	}
	f.Fuzz(func(t *testing.T, armored string) {
		sig, err := Parse(armored)
		if err != nil {
			return
		}
		if sig.Armor() != armored {
			t.Fatalf("re-armored differently:\n%q\n%q", sig.Armor(), armored)
		}
		again, err := Unmarshal(sig.Marshal())
		if err != nil || !bytes.Equal(again.Marshal(), sig.Marshal()) {
			t.Fatalf("binary form does not round-trip: %v", err)
		}
		_ = sig.Verify("acr", []byte("m"))
	})
}

// FuzzParsePublicKey: a key ParsePublicKey accepts parses again from its
// authorized_keys form to the same key.
func FuzzParsePublicKey(f *testing.F) {
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop")
	f.Add("ssh-rsa AAAA")
	f.Fuzz(func(t *testing.T, line string) {
		pub, err := ParsePublicKey(line)
		if err != nil {
			return
		}
		again, err := ParsePublicKey(AuthorizedKey(pub))
		if err != nil || !bytes.Equal(again.Marshal(), pub.Marshal()) {
			t.Fatalf("%q: does not round-trip: %v", line, err)
		}
	})
}
