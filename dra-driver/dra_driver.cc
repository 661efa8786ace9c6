#include "dra-driver/dra_driver.h"

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/contracts/dra_names.h"
#include "common/kube/kube_client.h"

namespace torus::dra {

Result<std::unique_ptr<DraDriver>> DraDriver::start(const DraOptions& options,
                                                    const kube::KubeConfig& kube,
                                                    kubelet::NodeView& node) {
  if (options.nodeName.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "the DRA driver needs the node name (--node-name or NODE_NAME): it names the "
                     "ResourceSlice pool");
  }
  auto driver = std::make_unique<DraDriver>();
  PreparerOptions preparer;
  preparer.pool = options.nodeName;
  preparer.cdiRoot = options.cdiRoot;
  preparer.podStillRuns = options.podStillRuns;
  preparer.checkpointFile =
      options.checkpointFile.empty()
          ? options.kubelet.pluginsDir / std::string(kDriverName) / "checkpoint.json"
          : options.checkpointFile;
  // Claims are read with a client of their own: the publisher's may be busy with a slow write.
  auto claimClient = std::make_shared<kube::KubeClient>(kube, std::chrono::seconds(10));
  ClaimReader reader = [claimClient](const std::string& nameSpace, const std::string& name) {
    return claimClient->get("/apis/resource.k8s.io/v1/namespaces/" + nameSpace +
                            "/resourceclaims/" + name);
  };
  PodReader pods = [claimClient](const std::string& nameSpace, const std::string& name) {
    return claimClient->get("/api/v1/namespaces/" + nameSpace + "/pods/" + name);
  };
  auto created = ClaimPreparer::create(std::move(preparer), node, std::move(pods));
  if (!created) return std::move(created).error().withContext("starting the DRA driver");
  driver->preparer_ = std::move(*created);

  SliceOptions slices;
  slices.coreDevices = options.coreDevices;
  slices.health = options.healthTaints;
  driver->slices_ = std::make_unique<NeuronSliceSource>(options.nodeName, node, slices);
  PublisherOptions publisher;
  publisher.driverName = std::string(kDriverName);
  publisher.nodeName = options.nodeName;
  publisher.resync = options.resync;
  driver->publisher_ = std::make_unique<SlicePublisher>(kube, *driver->slices_, publisher);
  if (options.ultraServerReservations) {
    if (options.reservationNamespace.empty()) {
      return makeError(ErrorCode::kInvalidArgument,
                       "UltraServer reservations need the namespace of the NeuronUltraServer "
                       "objects (POD_NAMESPACE)");
    }
    driver->preparer_->setReservation(false, "");
    // Nothing is published until the reservations are listed: a restarted agent would publish
    // a reserved node without its taint, and a stranger's claim could be allocated there.
    driver->slices_->awaitReservation();
    driver->reservation_ = std::make_unique<UltraServerReservation>(
        kube, options.reservationNamespace, options.nodeName,
        [preparer = driver->preparer_.get(), slices = driver->slices_.get()](
            bool known, const NodeReservation& reservation) {
          preparer->setReservation(known, reservation.workload);
          if (known) slices->setReservation(reservation.workload, reservation.bound);
        });
  }
  driver->publisher_->start();

  auto plugin =
      KubeletPlugin::start(options.kubelet, *driver->preparer_, reader, node, options.nodeName);
  if (!plugin) return std::move(plugin).error();
  driver->plugin_ = std::move(*plugin);
  driver->staleClaimSweeper_ = std::jthread(
      // One GET per prepared claim: every ten resyncs (10 min by default), not every one, so a
      // thousand nodes cost the API server tens of reads a second, not hundreds.
      [preparer = driver->preparer_.get(), reader,
       period = options.resync * 10](std::stop_token stop) {
        while (!sleepUntilStopped(stop, period)) {
          preparer->forgetClaimsGoneFromApi(reader);
        }
      });
  return driver;
}

DraDriver::~DraDriver() {
  stop();
}

void DraDriver::stop() {
  if (staleClaimSweeper_.joinable()) {
    staleClaimSweeper_.request_stop();
    staleClaimSweeper_.join();
  }
  reservation_.reset();
  if (plugin_) plugin_->stop();
  if (publisher_) publisher_->stop();
}

}  // namespace torus::dra
