# Sourced by a device call's script (results/<folder>/callN/device-call.sh) after it has cd'ed to
# the repository root: the frame every call has had since session 29, in one place.
#   OUT         the device tool's return folder (required); at most 8 files come back, so the
#               call's outputs are written under $W and packed into $OUT/call.tgz by `pack`
#   CALL_LIMIT  seconds the call may take (default DEVICE_CALL_LIMIT, set by the script)
# Gives: $W (outputs), $B (the bundle's binaries, unpacked from .devrun.txz, with
# LD_LIBRARY_PATH set to its libraries and CUDA's), left (seconds left), stamp MSG (a timed line
# into $W/stamps.txt and stdout), pack (call.tgz, and e2e.csv beside it when there is one);
# writes the GPU's name into $W/gpu.txt.
: "${OUT:?set OUT}"
T0=$(date +%s)
LIMIT=${CALL_LIMIT:-${DEVICE_CALL_LIMIT:-220}}
W=/tmp/w
rm -rf "$W" && mkdir -p "$W"
left() { echo $((LIMIT - ($(date +%s) - T0))); }
stamp() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$W/stamps.txt"; }
pack() { tar czf "$OUT/call.tgz" -C "$W" . ; cp "$W/e2e.csv" "$OUT/" 2>/dev/null; }
tar -xJf .devrun.txz || { echo "cannot unpack the bundle .devrun.txz"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$W/gpu.txt"
