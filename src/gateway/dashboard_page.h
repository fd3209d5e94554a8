// The dashboard's static files, compiled in (gateway/dashboard_page.cc): the
// HTML page, its script and its style sheet. The page loads only these and
// /dashboard/chart.js, so it runs under a policy allowing 'self' only.
#pragma once

#include <string_view>

namespace brisk::gateway {

std::string_view DashboardHtml();
std::string_view DashboardScript();
std::string_view DashboardStyle();

}  // namespace brisk::gateway
