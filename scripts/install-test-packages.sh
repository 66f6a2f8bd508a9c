#!/usr/bin/env bash
# Installs the Debian packages the tests need besides Go modules: PyMySQL (a
# MySQL client independent of the product's Go driver, which the simulator's
# authentication tests log in with) and the cryptography module it uses for
# caching_sha2_password's RSA exchange. Only apt is used; nothing is
# downloaded from elsewhere. A machine that already has them is left alone.
# The tests run Debian's own /usr/bin/python3 (a python3 earlier in PATH, e.g.
# pyenv's, does not see Debian's packages).
set -euo pipefail

log() { echo "[install-test-packages] $*"; }

if /usr/bin/python3 -c 'import pymysql, cryptography' >/dev/null 2>&1; then
  log "python3-pymysql and python3-cryptography are present"
  exit 0
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { log "need root (or sudo) to apt-get install python3-pymysql python3-cryptography"; exit 1; }
  sudo=(sudo)
fi
log "installing python3-pymysql python3-cryptography with apt-get"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq python3-pymysql python3-cryptography >/dev/null
/usr/bin/python3 -c 'import pymysql, cryptography'
log "installed"
