# Sourced by the GPU-machine scripts, from the repository root: unpacks .devbin's gzipped binaries and the CUTLASS headers that
# bench/devbin.sh packed into .devbin/cutlass.tgz (carried with [".devbin"]) into .cutlass/, and
# points kernelpro and its tests at them, at the repository and at .devbin's binary (unless
# KERNELPRO_BIN names another).
# The binaries bench/devbin.sh gzipped (to fit the carry limit), unpacked where missing (a carried
# .devbin replaces the folder, so an unpacked binary is this call's).
for g in .devbin/*.gz; do
  [ -f "$g" ] && { [ -f "${g%.gz}" ] || { gunzip -kf "$g" && chmod +x "${g%.gz}"; }; }
done
[ -d .cutlass/include ] || { [ -f .devbin/cutlass.tgz ] && tar xzf .devbin/cutlass.tgz; }
[ -d .cutlass/include ] && export CUTLASS_PATH=$PWD/.cutlass
[ -x .devbin/kernelpro ] && export KERNELPRO_BIN=${KERNELPRO_BIN:-$PWD/.devbin/kernelpro}
export KERNELPRO_ROOT=$PWD
