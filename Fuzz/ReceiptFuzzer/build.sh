#!/usr/bin/env bash
# Builds the libFuzzer target for the receipt parsers with the toolchain's swiftc:
#   Fuzz/ReceiptFuzzer/build.sh            # -> .build/fuzz/receipt-fuzzer
#   .build/fuzz/receipt-fuzzer -max_total_time=60 -max_len=4096 -artifact_prefix=.build/fuzz/ .build/fuzz/corpus Fuzz/ReceiptFuzzer/seeds
# SwiftASN1 is compiled from the package's checkout (run `swift build` once first), with the same
# coverage and AddressSanitizer instrumentation, so the fuzzer also steers through its BER parser.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
asn1="${SWIFT_ASN1_DIR:-$root/.build/checkouts/swift-asn1}"
out="${FUZZ_BUILD_DIR:-$root/.build/fuzz}"
sanitizers="${FUZZ_SANITIZERS:-fuzzer,address}"
if [[ ! -d "$asn1/Sources/SwiftASN1" ]]; then
    echo "swift-asn1 sources not found at $asn1; run 'swift build' or set SWIFT_ASN1_DIR" >&2
    exit 1
fi
mkdir -p "$out/corpus"

echo "== SwiftASN1 ($asn1)"
find "$asn1/Sources/SwiftASN1" -name '*.swift' -print0 | xargs -0 swiftc \
    -module-name SwiftASN1 -parse-as-library -swift-version 5 -O -g -sanitize="$sanitizers" \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
    -emit-module -emit-module-path "$out/SwiftASN1.swiftmodule" \
    -emit-library -static -o "$out/libSwiftASN1.a"

echo "== receipt-fuzzer"
swiftc -module-name ReceiptFuzzer -parse-as-library -swift-version 6 -O -g -sanitize="$sanitizers" \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature InternalImportsByDefault \
    -use-ld=lld -I "$out" -L "$out" -lSwiftASN1 \
    "$root"/Sources/StoreCore/*.swift "$root"/Sources/AppStoreServer/Receipts/*.swift \
    "$root/Fuzz/ReceiptFuzzer/FuzzEntry.swift" \
    -o "$out/receipt-fuzzer"
echo "built $out/receipt-fuzzer"
