#!/usr/bin/env bash
# A private CA and a `localhost` server certificate it signed, for the HTTPS/HTTP/2 unit test of
# the API client (src/api/transport.rs). Valid for 100 years; made with OpenSSL, not with our code.
#
#   tests/data/gen/tls_cert.sh        # writes tests/data/tls/{ca.pem,server.pem,server.key}
set -euo pipefail
cd "$(dirname "$0")/../tls"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 \
  -subj "/CN=draftgen test CA" -keyout "$tmp/ca.key" -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout "$tmp/server.key" -out "$tmp/server.csr"
printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$tmp/ext"
openssl x509 -req -in "$tmp/server.csr" -CA ca.pem -CAkey "$tmp/ca.key" -CAcreateserial \
  -days 36500 -extfile "$tmp/ext" -out server.pem
openssl pkcs8 -topk8 -nocrypt -in "$tmp/server.key" -out server.key
rm -f ca.srl
