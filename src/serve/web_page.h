// The page served at "/": pick or drop an image, it is sent as {"instances": [{"b64": ...}]} to
// :classify, and the top-5 classes are shown with bars. `?image=URL` makes the page fetch that
// image and submit it at once (the headless-browser test uses it).
#pragma once

#include <string>

namespace ic {

const std::string& web_page_html();

}  // namespace ic
