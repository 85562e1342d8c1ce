# Shared by the .ci/install-*.sh scripts (sourced, not run): the root check and the apt
# install of whatever packages are missing, so that every script stays safe to run again.

# require_root NAME: exit 1, naming the script, unless running as root.
require_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "$1: must run as root" >&2
        exit 1
    fi
}

# apt_install_missing PACKAGE...: install (without recommends) the packages dpkg does not
# list as installed; nothing, not even apt-get update, when all are there.
apt_install_missing() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}
