# The CUDA backend (src/backend/cuda): cuDNN + cuBLAS + our own .cu kernels.
# Included by src/CMakeLists.txt when IC_WITH_CUDA=ON; defines the target ic_backend_cuda.
#
# CMake 3.25 predates CUDA 13, so nothing is left to its defaults: the compiler path, the
# architecture (sm_90 only: H100/H200, and one architecture keeps nvcc's compile time low)
# and the toolkit root are given explicitly.
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
if(NOT CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
if(NOT CUDAToolkit_ROOT)
  get_filename_component(CUDAToolkit_ROOT "${CMAKE_CUDA_COMPILER}/../.." ABSOLUTE)
endif()
enable_language(CUDA)
# CMake 3.25 cannot ask nvcc for C++20; the .cu files include only CUDA and kernel headers.
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)

find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64 REQUIRED)
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include
          REQUIRED)

file(GLOB IC_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cc
     ${PROJECT_SOURCE_DIR}/src/backend/cuda/*.cu)
add_library(ic_backend_cuda STATIC ${IC_CUDA_SOURCES})
target_include_directories(ic_backend_cuda PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/src)
target_include_directories(ic_backend_cuda PRIVATE ${CUDNN_INCLUDE_DIR})
target_compile_options(ic_backend_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CXX>:${IC_WARNINGS}>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings --expt-relaxed-constexpr>)
set_target_properties(ic_backend_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                                 POSITION_INDEPENDENT_CODE ON)
target_link_libraries(ic_backend_cuda PUBLIC ic_backend_api
                      PRIVATE CUDA::cudart CUDA::cublas CUDA::cublasLt ${CUDNN_LIBRARY})

# The GPU training benchmark (bench/gpu/run.sh runs it). It reads the device's memory use
# directly, hence cudart; ic_train is defined later in src/CMakeLists.txt (resolved at
# generate time).
if(EXISTS ${PROJECT_SOURCE_DIR}/bench/gpu/train_bench.cc)
  ic_add_tool(train_bench SOURCES ${PROJECT_SOURCE_DIR}/bench/gpu/train_bench.cc
              DEPS ic_train CUDA::cudart)
endif()
