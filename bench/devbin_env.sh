# Sourced by the GPU-machine scripts, from the repository root: unpacks the CUTLASS headers that
# bench/devbin.sh packed into .devbin/cutlass.tgz (carried with [".devbin"]) into .cutlass/, and
# points kernelpro and its tests at them, at the repository and at .devbin's binary (unless
# KERNELPRO_BIN names another).
[ -d .cutlass/include ] || { [ -f .devbin/cutlass.tgz ] && tar xzf .devbin/cutlass.tgz; }
[ -d .cutlass/include ] && export CUTLASS_PATH=$PWD/.cutlass
[ -x .devbin/kernelpro ] && export KERNELPRO_BIN=${KERNELPRO_BIN:-$PWD/.devbin/kernelpro}
export KERNELPRO_ROOT=$PWD
