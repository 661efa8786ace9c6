// The logging settings every binary shares (--log-level, --log-debug, --log-format), declared
// once so their names, environment variables and help never differ between binaries.
#pragma once

#include "common/base/log.h"
#include "common/config/settings.h"

namespace torus::config {

// Applies each value to `settings` as it is parsed; call log::configure(*settings) afterwards.
void addLogSettings(SettingTable& table, log::Settings* settings);

}  // namespace torus::config
