#!/usr/bin/env bash
# Every tracked C++ file is formatted as the root .clang-format says.
#   tests/lint/clang-format.sh [CLANG_FORMAT]
# Fix with: git ls-files '*.cpp' '*.hpp' | xargs clang-format-14 -i
set -euo pipefail
cd "$(dirname "$0")/../.."
fmt=${1:-clang-format-14}
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
((${#files[@]} > 0)) || { echo "clang-format: no C++ files found (not a git checkout?)" >&2; exit 1; }
if ! "$fmt" --dry-run -Werror "${files[@]}"; then
    echo "clang-format: the files above differ from .clang-format; run:" >&2
    echo "  git ls-files '*.cpp' '*.hpp' | xargs $fmt -i" >&2
    exit 1
fi
echo "clang-format: ${#files[@]} files formatted as .clang-format says"
