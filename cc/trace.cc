#include "cc/trace.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/rng.h"
#include "cc/text.h"

namespace kvspec {
namespace {

double Unit(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

// spec/trace.md#hashes: jitter(t, p).
double Jitter(uint64_t seed, uint64_t step, Position position) {
  return Unit(Mix64(Mix64(seed ^ 0x6a09e667f3bcc909ULL ^ step) + position));
}

// spec/harness.md#subjects: a trace parameter is named "trace.<field>".
Subject TraceRange(const char* parameter) {
  return {"range", {std::string("trace.") + parameter}};
}

absl::Status Invalid(const char* parameter, const std::string& value,
                     const char* rule) {
  return Refuse(ErrorCategory::kInvalidTrace, TraceRange(parameter),
                absl::StrFormat("trace: %s must be %s, got %s", parameter,
                                rule, value));
}

absl::Status CheckCount(const char* parameter, uint64_t value, uint64_t low,
                        uint64_t high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return Refuse(ErrorCategory::kInvalidTrace, TraceRange(parameter),
                absl::StrFormat("trace: %s must be in [%d, %d], got %d",
                                parameter, low, high, value));
}

// A share of a row: in [+0.0, 1], or (0, 1] when `positive`. The top keeps
// every weight finite (spec/trace.md#parameters).
absl::Status CheckMass(const char* parameter, double value, bool positive) {
  const bool ok = (positive ? value > 0.0 : value >= 0.0) && value <= 1.0;
  if (ok && !std::signbit(value)) return absl::OkStatus();
  return Invalid(parameter, ShortestDecimal(value),
                 positive ? "in (0, 1]" : "in [+0.0, 1]");
}

}  // namespace

uint64_t Mix64(uint64_t x) {
  uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Salience(uint64_t seed, Position position) {
  const uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (2 * uint64_t{position} + 1);
  return static_cast<double>((Mix64(x) >> 11) + 1) * 0x1.0p-53;
}

absl::Status ValidateTrace(const TraceConfig& c) {
  constexpr uint64_t k2To31 = uint64_t{1} << 31;
  KVSPEC_RETURN_IF_ERROR(CheckCount("steps", c.steps, 1, k2To31));
  KVSPEC_RETURN_IF_ERROR(CheckCount("sinks", c.sinks, 0, k2To31));
  KVSPEC_RETURN_IF_ERROR(CheckMass("sink_mass", c.sink_mass, false));
  KVSPEC_RETURN_IF_ERROR(CheckCount("recent_length", c.recent_length, 0, 65536));
  KVSPEC_RETURN_IF_ERROR(CheckMass("recent_mass", c.recent_mass, false));
  if (!(c.recent_decay > 0.0 && c.recent_decay <= 1.0)) {
    return Invalid("recent_decay", ShortestDecimal(c.recent_decay),
                   "in (0, 1]");
  }
  KVSPEC_RETURN_IF_ERROR(CheckCount("heavy_count", c.heavy_count, 0, 65536));
  KVSPEC_RETURN_IF_ERROR(CheckMass("heavy_mass", c.heavy_mass, false));
  KVSPEC_RETURN_IF_ERROR(CheckCount("epoch_length", c.epoch_length, 1, k2To31));
  KVSPEC_RETURN_IF_ERROR(CheckMass("background_mass", c.background_mass, true));
  if (!(c.noise >= 0.0 && c.noise <= 1.0) || std::signbit(c.noise)) {
    return Invalid("noise", ShortestDecimal(c.noise), "in [+0.0, 1]");
  }
  return absl::OkStatus();
}

absl::StatusOr<TraceGenerator> TraceGenerator::Create(const TraceConfig& config) {
  KVSPEC_RETURN_IF_ERROR(ValidateTrace(config));
  return TraceGenerator(config);
}

TraceConfig HeadTraceConfig(const TraceConfig& config, uint32_t head) {
  if (head == 0) return config;
  TraceConfig own = config;
  own.seed = Mix64(config.seed ^ 0x3c6ef372fe94f82bULL ^ head);
  switch ((head - 1) % 3) {
    case 0:
      own.sink_mass = config.sink_mass * 4.0;  // sink head
      break;
    case 1:
      own.recent_mass = config.recent_mass * 4.0;  // local head
      break;
    default:
      own.heavy_mass = config.heavy_mass * 4.0;  // heavy-hitter head
      break;
  }
  return own;
}

absl::StatusOr<TraceGenerator> TraceGenerator::CreateForHead(
    const TraceConfig& config, uint32_t head) {
  KVSPEC_RETURN_IF_ERROR(ValidateTrace(config));
  return TraceGenerator(HeadTraceConfig(config, head));
}

void TraceGenerator::StartEpoch(uint64_t epoch) {
  epoch_ = epoch;
  heavy_.clear();
  const uint64_t start = epoch * config_.epoch_length;
  if (start <= config_.sinks || config_.heavy_count == 0) return;
  const uint64_t candidates = start - config_.sinks;
  Rng rng(Mix64(config_.seed ^ 0xbb67ae8584caa73bULL ^ epoch));
  for (uint32_t draw = 0; draw < config_.heavy_count; ++draw) {
    const Position position =
        static_cast<Position>(config_.sinks + rng.Uniform(candidates));
    auto it = std::lower_bound(
        heavy_.begin(), heavy_.end(), position,
        [](const std::pair<Position, uint32_t>& h, Position p) {
          return h.first < p;
        });
    if (it != heavy_.end() && it->first == position) {
      ++it->second;
    } else {
      heavy_.insert(it, {position, 1});
    }
  }
}

bool TraceGenerator::Advance() {
  if (started_ && uint64_t{step_} + 1 >= config_.steps) return false;
  if (!started_) {
    started_ = true;
    step_ = 0;
    StartEpoch(0);
  } else {
    // Z_t adds salience(t - 1), from position 0 up.
    salience_sum_ = salience_sum_ + Salience(config_.seed, step_);
    ++step_;
    const uint64_t epoch = step_ / config_.epoch_length;
    if (epoch != epoch_) StartEpoch(epoch);
  }
  const uint32_t t = step_;
  sinks_here_ = std::min(config_.sinks, t);
  recent_first_ = std::max<uint64_t>(config_.sinks,
                                     t >= config_.recent_length
                                         ? t - config_.recent_length
                                         : 0);
  const uint32_t recent_count = t > recent_first_ ? t - recent_first_ : 0;
  recent_powers_.clear();
  double power = 1.0;
  for (uint32_t j = 0; j < recent_count; ++j) {
    recent_powers_.push_back(power);
    power = power * config_.recent_decay;
  }
  recent_norm_ = 0.0;
  for (double p : recent_powers_) recent_norm_ = recent_norm_ + p;
  mass_ = 0.0;
  if (sinks_here_ > 0) mass_ = mass_ + config_.sink_mass;
  if (recent_count > 0) mass_ = mass_ + config_.recent_mass;
  if (!heavy_.empty()) mass_ = mass_ + config_.heavy_mass;
  if (t > 0) mass_ = mass_ + config_.background_mass;
  return true;
}

float TraceGenerator::Weight(Position p) const {
  const uint32_t t = step_;
  double c = 0.0;
  if (p < sinks_here_) {
    c = c + config_.sink_mass / static_cast<double>(sinks_here_);
  }
  if (!recent_powers_.empty() && p >= recent_first_) {
    c = c + config_.recent_mass * recent_powers_[t - 1 - p] / recent_norm_;
  }
  if (!heavy_.empty()) {
    auto it = std::lower_bound(
        heavy_.begin(), heavy_.end(), p,
        [](const std::pair<Position, uint32_t>& h, Position q) {
          return h.first < q;
        });
    if (it != heavy_.end() && it->first == p) {
      c = c + (config_.heavy_mass / static_cast<double>(config_.heavy_count)) *
                  static_cast<double>(it->second);
    }
  }
  // spec/trace.md#steps-and-rows: the background share is rounded to
  // binary32 and jittered in binary32 arithmetic (two roundings, never a
  // fused multiply-add), then added in binary64.
  const float background = static_cast<float>(
      (config_.background_mass * Salience(config_.seed, p)) / salience_sum_);
  const float noise = static_cast<float>(config_.noise);
  const float jitter =
      static_cast<float>(2.0 * Jitter(config_.seed, t, p) - 1.0);
  const float factor = 1.0f + noise * jitter;
  const float noisy = background * factor;
  c = c + static_cast<double>(noisy);
  return static_cast<float>(c / mass_);
}

std::vector<float> TraceGenerator::Row() const {
  std::vector<float> row(step_);
  for (Position p = 0; p < step_; ++p) row[p] = Weight(p);
  return row;
}

absl::Status RunTrace(Policy& policy, const TraceConfig& config,
                      const TraceStepCallback& on_step, bool want_detail) {
  absl::StatusOr<TraceGenerator> trace = TraceGenerator::Create(config);
  if (!trace.ok()) return trace.status();
  std::vector<float> gathered;
  EvictionDetail detail;
  while (trace->Advance()) {
    gathered.clear();
    for (Position position : policy.kept()) {
      gathered.push_back(trace->Weight(position));
    }
    absl::StatusOr<std::vector<Position>> victims =
        policy.Step({trace->step(), 1, absl::MakeConstSpan(gathered)},
                    want_detail ? &detail : nullptr);
    if (!victims.ok()) return victims.status();
    if (on_step) on_step(trace->step(), *victims, detail);
  }
  return absl::OkStatus();
}

}  // namespace kvspec
