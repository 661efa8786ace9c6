// The exposition reader `kubectl neuron top` uses: what our writer writes reads back exactly
// (escapes, infinities, timestamps), and a malformed line is an error naming its line.
#include "common/metrics/prometheus_parse.h"

#include <cmath>

#include <gtest/gtest.h>

#include "common/metrics/prometheus_text.h"

namespace torus::metrics {
namespace {

TEST(PrometheusParse, ReadsBackWhatTheWriterWrites) {
  PrometheusText out;
  out.family("torus_allocation_info", "gauge", "help with \\ and\nnewline");
  out.sample("torus_allocation_info", {{"pod", "a \"quoted\" \\ name\nx"}, {"neuroncore", "7"}}, 1);
  out.sample("big", {}, 1e21);
  out.sample("fraction", {}, 0.1234567890123456);
  out.sample("inf", {{"le", "+Inf"}}, HUGE_VAL);
  auto samples = parsePrometheusText(out.text() + "with_time{a=\"b\"} 3 1700000000000\n");
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  ASSERT_EQ(samples->size(), 5U);
  EXPECT_EQ((*samples)[0].label("pod"), "a \"quoted\" \\ name\nx");
  EXPECT_EQ((*samples)[0].label("neuroncore"), "7");
  EXPECT_EQ((*samples)[0].label("absent"), "");
  EXPECT_EQ((*samples)[1].value, 1e21);
  EXPECT_EQ((*samples)[2].value, 0.1234567890123456) << "no digits lost";
  EXPECT_TRUE(std::isinf((*samples)[3].value));
  EXPECT_EQ((*samples)[4].value, 3);
}

TEST(PrometheusParse, AMalformedLineIsAnErrorNamingIt) {
  for (const char* bad : {"ok 1\nno_value\n", "ok 1\nx{a=\"b\" 1\n", "ok 1\nx{a=b} 1\n",
                          "ok 1\nx 1two\n", "ok 1\n{a=\"b\"} 1\n", "ok 1\nx{a=\"unclosed} 1\n"}) {
    const auto parsed = parsePrometheusText(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().message.find("metrics line 2"), std::string::npos)
        << parsed.error().message;
  }
  EXPECT_TRUE(parsePrometheusText("# only a comment\n\n").ok());
}

}  // namespace
}  // namespace torus::metrics
